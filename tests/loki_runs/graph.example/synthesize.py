#!/usr/bin/env python3
# Stand-in for graph.example.yaml's scripts/synthesize.py: checks the diamond's merged state
# and routes through `_next`: to the agent node when the prompt asks "in depth", else to
# the map node.
import json
import os

path = os.environ.get("GRAPH_STATE_FILE")
state = json.load(open(path)) if path else json.loads(os.environ["GRAPH_STATE"])
assert "\n" in state["context"], "context is the concat of both branches"
if "in depth" in state["initial_prompt"]:
    print(json.dumps({"_next": "deep_dive"}))
else:
    print(json.dumps({"_next": "subjects_map", "subjects": ["wasi", "runtimes"]}))
