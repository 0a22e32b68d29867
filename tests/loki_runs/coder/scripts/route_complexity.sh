#!/usr/bin/env bash
# Stand-in: complex plans (score >= 7) go through the approval gate.
python3 - <<'PY'
import json, os
s = json.loads(os.environ["GRAPH_STATE"])
print(json.dumps({"_next": "gate_approval" if s["complexity_score"] >= 7 else "implement"}))
PY
