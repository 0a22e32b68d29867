#!/usr/bin/env bash
nohup bash -c 'sleep 600' '{{TAG}}-nohup' >/dev/null 2>&1 &
setsid bash -c 'sleep 600' '{{TAG}}-setsid' >/dev/null 2>&1 < /dev/null &
echo ran >> '{{MARKER}}'
echo '{"started": true}'
