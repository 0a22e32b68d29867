from lllm.core.const import ParseError
from lllm.core.prompt import DefaultTagParser, Prompt


class NumberParser(DefaultTagParser):
    """The answer must be a number (a parser of the prompt's own: LLLM runs it on each reply)."""

    def parse(self, content, **runtime_args):
        parsed = super().parse(content, **runtime_args)
        if not parsed["xml_tags"]["answer"][0].strip().isdigit():
            raise ParseError("the answer must be a number, in digits")
        return parsed


counter = Prompt(
    path="counter",
    prompt="Count what you are asked. Answer as <answer>N</answer>.",
    parser=NumberParser(xml_tags=["answer"]),
)
