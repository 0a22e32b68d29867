"""The researcher's tool (named by `tools: ["tools:lookup_fact"]` in configs/default.yaml)."""

FACTS = {
    "mont blanc": "Mont Blanc is 4,806 m high (2021 survey).",
    "k2": "K2 is 8,611 m high.",
}


def lookup_fact(topic: str) -> str:
    """Look a fact up in the desk's reference notes."""
    return FACTS.get(topic.strip().lower(), f"No notes on {topic}.")
