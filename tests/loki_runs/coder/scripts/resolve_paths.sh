#!/usr/bin/env bash
# Stand-in: resolve project_dir, then go to the planner.
echo '{"project_dir": "/tmp/coder-project", "_next": "analyze_request"}'
