#!/usr/bin/env bash
set -e

# @cmd Plant a marker.
# @option --what! What to plant
plant() {
    echo "planted $argc_what" >> '{{MARKER}}'
    echo "done"
}

eval "$(argc --argc-eval "$0" "$@")"
