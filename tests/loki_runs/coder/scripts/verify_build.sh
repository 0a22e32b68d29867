#!/usr/bin/env bash
# Stand-in: the first build fails (-> fallback fix_loop_gate), later ones pass.
python3 - <<'PY'
import json, os, sys
s = json.loads(os.environ["GRAPH_STATE"])
if s["fix_attempts"] == 0:
    print("error[E0425]: cannot find value `x`", file=sys.stderr)
    sys.exit(1)
print(json.dumps({"build_output": "build ok", "_next": "verify_tests"}))
PY
