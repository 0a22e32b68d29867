#!/usr/bin/env bash
# Stand-in: tests pass.
echo '{"tests_output": "2 passed", "_next": "end_success"}'
