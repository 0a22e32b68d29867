#!/usr/bin/env bash
# Decide which checks to run. Reads the state from GRAPH_STATE (or GRAPH_STATE_FILE).
echo '{"checks": ["lint", "tests"]}'
