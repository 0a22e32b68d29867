#!/usr/bin/env bash
echo '{"findings": "tests: 42 passed"}'
