"""The tool of bench/steps/tool_loop.yaml (`import_path: bench_tools.echo`).

A LangChain tool when langchain_core is importable (sherma requires a BaseTool), otherwise the
plain function (what Switchyard's Python bridge calls).
"""


def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


try:
    from langchain_core.tools import tool as _tool
except ImportError:  # plain Python: keep the function
    pass
else:
    echo = _tool(echo)
