from lllm.core.prompt import DefaultSimpleHandler, DefaultTagParser, Prompt, tool


@tool(description="Add two whole numbers.")
def add(a: int, b: int) -> int:
    return a + b


solver = Prompt(
    path="solver",
    prompt="You solve sums for {user}. Answer as <answer>...</answer>.",
    parser=DefaultTagParser(xml_tags=["answer"]),
    handler=DefaultSimpleHandler(
        exception_msg="Wrong: {error_message}. Use the tags.",
        interrupt_msg="Tool said: {call_results}",
    ),
    function_list=[add],
)
