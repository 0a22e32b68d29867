from lllm.core.prompt import Prompt

_ROLES = {
    "critic": "You criticise {topic} in one sentence.",
    "fan": "You praise {topic} in one sentence.",
}

for _name, _text in _ROLES.items():
    globals()[_name] = Prompt(path=_name, prompt=_text)
