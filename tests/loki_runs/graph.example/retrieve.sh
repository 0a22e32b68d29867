#!/usr/bin/env bash
# Stand-in for the example's rag node `retrieve` (rag is not supported yet): a script that
# writes what the rag node's state_updates would have written.
python3 -c '
import json, os
s = json.loads(os.environ["GRAPH_STATE"])
print(json.dumps({"context": "local notes on " + s["topic"], "sources": "knowledge/a.md"}))
'
