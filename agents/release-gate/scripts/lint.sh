#!/usr/bin/env bash
echo '{"findings": "lint: 0 problems"}'
