"""Drive a `switchyard serve` with LangGraph's own Python SDK (langgraph-sdk from PyPI).

Usage: python langgraph_client.py URL [API_KEY]
Prints one JSON object: what the SDK saw, for the Rust test to check. Fails (non-zero) on
anything the SDK refuses.
"""

import json
import sys

import httpx
from langgraph_sdk import get_sync_client
from langgraph_sdk.schema import Command

url = sys.argv[1]
key = sys.argv[2] if len(sys.argv) > 2 else None
client = get_sync_client(url=url, api_key=key)
out = {}

assistants = client.assistants.search()
out["assistants"] = sorted(a["graph_id"] for a in assistants)
triage = client.assistants.get("support-triage")
out["triage_id"] = triage["assistant_id"]
graph = client.assistants.get_graph(triage["assistant_id"])
out["graph_nodes"] = sorted(n["id"] for n in graph["nodes"])

# A sherma agent: stream to its interrupt, resume it with Command(resume=...).
thread = client.threads.create(metadata={"case": "sdk"})
tid = thread["thread_id"]
first = []
for part in client.runs.stream(
    tid,
    "support-triage",
    input={"messages": [{"role": "user", "content": "Where is order 1001?"}]},
    stream_mode=["values", "updates"],
):
    first.append({"event": part.event, "data": part.data})
out["first_events"] = [p["event"] for p in first]
out["first_interrupt"] = next(
    (p["data"]["__interrupt__"] for p in first if p["event"] == "updates" and "__interrupt__" in p["data"]),
    None,
)
state = client.threads.get_state(tid)
out["state_next"] = state["next"]
out["state_task_interrupts"] = [i["id"] for t in state["tasks"] for i in t["interrupts"]]
out["thread_status_waiting"] = client.threads.get(tid)["status"]

second = []
for part in client.runs.stream(tid, "support-triage", command=Command(resume="no thanks, done"), stream_mode="values"):
    second.append({"event": part.event, "data": part.data})
out["second_events"] = [p["event"] for p in second]
last_values = [p["data"] for p in second if p["event"] == "values"][-1]
out["final_messages"] = [(m.get("type"), m.get("content")) for m in last_values["messages"]]
out["thread_status_done"] = client.threads.get(tid)["status"]
history = client.threads.get_history(tid, limit=50)
out["history_steps"] = [h["metadata"]["step"] for h in history]
runs = client.runs.list(tid)
out["runs"] = [(r["run_id"], r["status"]) for r in runs]

# A Loki approval: wait for it, answer through Switchyard's own endpoint, join the run.
t2 = client.threads.create()["thread_id"]
waited = client.runs.wait(t2, "release-gate", input={"input": "release 1.2"})
out["approval"] = waited.get("__interrupt__")
run_id = client.runs.list(t2)[0]["run_id"]
headers = {"x-api-key": key} if key else {}
r = httpx.post(f"{url}/switchyard/runs/{run_id}/answer", json={"answer": "ship", "by": "sdk test"}, headers=headers)
out["answer_status"] = r.status_code
joined = client.runs.join(t2, run_id)
out["joined_decision"] = joined.get("decision")
out["loki_run_status"] = client.runs.get(t2, run_id)["status"]
audit = httpx.get(f"{url}/switchyard/answers", params={"run_id": run_id}, headers=headers).json()
out["audit"] = [(a["interrupt_id"], a["answer"], a["who"]) for a in audit]

# An LLLM agent: the user message from `messages`, a prompt argument beside it; one wait.
t3 = client.threads.create()["thread_id"]
done = client.runs.wait(
    t3,
    "research-desk.researcher",
    input={"messages": [{"role": "user", "content": "How tall is Mont Blanc?"}], "audience": "hikers"},
)
out["lllm_delivery"] = (done.get("delivery") or {}).get("content")
out["lllm_state"] = client.threads.get_state(t3)["values"]["state"]
out["lllm_run_status"] = client.runs.list(t3)[0]["status"]

print(json.dumps(out))
