#!/usr/bin/env bash
# Stand-in: count the attempt, loop back to implement until the budget is spent.
python3 - <<'PY'
import json, os
s = json.loads(os.environ["GRAPH_STATE"])
n = s["fix_attempts"] + 1
if n > s["max_fix_attempts"]:
    print(json.dumps({"_next": "end_failure"}))
else:
    print(json.dumps({"fix_attempts": n, "fix_instructions": "Fix loop status: build failed", "_next": "implement"}))
PY
