from lllm.core.prompt import Prompt

ENABLED = False

shown = Prompt(path="shown", prompt="I exist.")
if ENABLED:
    ghost = Prompt(path="ghost", prompt="Only when enabled.")
