"""sherma side of bench/llm_calls.rs: a chain of call_llm nodes run by sherma 1.8.0 against the
same fake OpenAI-compatible server (real HTTP, the server waits a fixed latency per call).

Usage (with the venv python, see bench/README.md):

    python bench/sherma_llm_peer.py --yaml FILE --base-url http://127.0.0.1:PORT/v1 --calls 20 [--runs 3]

Prints one JSON object: {"name", "calls", "seconds", "runs"} where `seconds` is the median wall
time of `graph.ainvoke` alone (imports, YAML loading and graph compilation are done before).
The chat model is sherma's own (langchain_openai.ChatOpenAI built from the YAML's `llms`),
pointed at the fake server through OPENAI_BASE_URL, as a user would point it at a local server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--yaml", required=True)
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    os.environ["OPENAI_API_KEY"] = "sk-bench"
    os.environ["OPENAI_BASE_URL"] = a.base_url
    os.environ["OPENAI_API_BASE"] = a.base_url

    from sherma import DeclarativeAgent

    agent = DeclarativeAgent(id="chain", version="1.0.0", yaml_path=a.yaml)
    graph = await agent.get_graph()

    async def once(thread: str) -> tuple[float, dict]:
        config = {"recursion_limit": 1000, "configurable": {"thread_id": thread}}
        t = time.perf_counter()
        out = await graph.ainvoke({"messages": [{"role": "user", "content": "go"}]}, config)
        return time.perf_counter() - t, out

    await once("warmup")
    times = []
    for r in range(a.runs):
        dt, out = await once(f"run-{r}")
        n = len(out.get("messages", []))
        if n != a.calls + 1:
            print(json.dumps({"error": f"expected {a.calls + 1} messages, got {n}"}), flush=True)
            sys.exit(1)
        times.append(dt)
    print(json.dumps({"name": "llm_chain", "calls": a.calls, "seconds": statistics.median(times),
                      "runs": [round(t, 4) for t in times]}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
