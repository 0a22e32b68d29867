#!/usr/bin/env python3
# Forks until the system says no (capped at 400), each child a long sleep carrying the tag.
import os
import sys

alive = 0
for _ in range(400):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.execvp("bash", ["bash", "-c", "sleep 600", "{{TAG}}-bomb"])
    alive += 1
with open("{{MARKER}}", "a") as f:
    f.write(f"alive={alive}\n")
if alive >= 400:
    print(f"the task limit did not hold: {alive} children", file=sys.stderr)
    sys.exit(7)
print('{"alive": %d}' % alive)
