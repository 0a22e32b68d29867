"""sherma side of bench/run_steps.rs: run bench/steps/*.yaml with sherma 1.8.0 and time it.

Usage (with the venv python, see bench/README.md):

    python bench/sherma_peer.py loop --limit 5000 [--runs 3]
    python bench/sherma_peer.py tool_loop --calls 100 [--runs 3]

Prints one JSON object per line: {"name", "steps", "seconds", ...} where `seconds` is the
median wall time of `graph.ainvoke` alone (imports, YAML loading and graph compilation are
done once, beforehand, and not timed) and `steps` the number of node steps of one run.

The LLM is faked the way sherma's own tests do it (tests/integration/conftest.py): a LangChain
BaseChatModel subclass returning scripted messages, whose bind_tools returns itself, injected
with RegistryBundle(chat_models={...}) assigned to agent._registries before get_graph().
The checkpointer is on: the YAML declares `checkpointer: {type: memory}` (a MemorySaver).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
STEPS = HERE / "steps"
# `import_path: bench_tools.echo` resolves against bench/steps.
sys.path.insert(0, str(STEPS))

from langchain_core.language_models.chat_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402
from sherma import DeclarativeAgent  # noqa: E402
from sherma.registry.bundle import RegistryBundle  # noqa: E402


class ScriptedChatModel(BaseChatModel):
    """Returns `calls` tool-call messages (tool `echo`), then one final text message.

    Like upstream's FakeChatModel, except that the reply is built on the fly (so a long script
    costs nothing to set up) and `_agenerate` is implemented directly instead of going through
    the default thread-pool executor (which only makes sherma faster).
    """

    calls: int = 0
    taken: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def reset(self, calls: int) -> None:
        self.calls = calls
        self.taken = 0

    def _reply(self) -> BaseMessage:
        i = self.taken
        self.taken += 1
        if i < self.calls:
            return AIMessage(
                content="",
                tool_calls=[
                    {"name": "echo", "args": {"text": f"ping {i}"}, "id": f"call_{i}", "type": "tool_call"}
                ],
            )
        return AIMessage(content="done")

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply())])

    async def _agenerate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        return self._generate(messages, stop, run_manager, **kwargs)

    def bind_tools(self, tools, **kwargs):
        return self


async def build(yaml_name: str, agent_id: str, model: ScriptedChatModel | None):
    agent = DeclarativeAgent(id=agent_id, version="1.0.0", yaml_path=str(STEPS / yaml_name))
    if model is not None:
        agent._registries = RegistryBundle(chat_models={"bench-llm": model})
    graph = await agent.get_graph()
    return agent, graph


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("bench", choices=["loop", "tool_loop"])
    ap.add_argument("--limit", type=int, default=5000, help="loop iterations (loop.yaml)")
    ap.add_argument("--calls", type=int, default=100, help="tool calls (tool_loop.yaml)")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()

    model = ScriptedChatModel() if a.bench == "tool_loop" else None
    agent, graph = await build(f"{a.bench}.yaml", a.bench, model)
    # The YAML's langgraph_config only applies through send_message; pass it here.
    recursion_limit = agent.recursion_limit

    def make_input() -> dict[str, Any]:
        if a.bench == "loop":
            return {"limit": a.limit}
        model.reset(a.calls)
        return {"messages": [{"role": "user", "content": "go"}]}

    expected = 2 * (a.limit if a.bench == "loop" else a.calls) + 1

    async def once(thread: str) -> tuple[float, dict[str, Any], int]:
        config = {"recursion_limit": recursion_limit, "configurable": {"thread_id": thread}}
        inp = make_input()
        t = time.perf_counter()
        out = await graph.ainvoke(inp, config)
        dt = time.perf_counter() - t
        snap = await graph.aget_state(config)
        return dt, out, snap.metadata.get("step", -1)

    # Warm-up (not reported): a short run.
    saved = (a.limit, a.calls)
    a.limit, a.calls = 5, 5
    await once("warmup")
    a.limit, a.calls = saved

    times = []
    steps = -1
    for r in range(a.runs):
        dt, out, steps = await once(f"run-{r}")
        times.append(dt)
        if a.bench == "loop":
            ok = out.get("count") == a.limit
        else:
            ok = out.get("answer") == "done" and len(out.get("messages", [])) == 2 * a.calls + 2
        if not ok or steps != expected:
            print(
                json.dumps({"name": a.bench, "error": f"unexpected result: steps {steps} (expected {expected})",
                            "state_keys": sorted(out)}),
                flush=True,
            )
            sys.exit(1)

    print(
        json.dumps(
            {
                "name": a.bench,
                "steps": steps,
                "seconds": statistics.median(times),
                "runs": [round(t, 4) for t in times],
                "checkpointer": type(graph.checkpointer).__name__,
                "sherma": __import__("sherma").__version__ if hasattr(__import__("sherma"), "__version__") else "?",
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    asyncio.run(main())
