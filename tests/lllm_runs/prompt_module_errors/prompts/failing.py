from lllm.core.prompt import Prompt

greeter = Prompt(path="greeter", prompt="Hello.")
settings = {"retries": 3}
timeout = 10 / (settings["retries"] - 3)
