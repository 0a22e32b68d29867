#!/usr/bin/env bash
# @cmd An endless answer.
endless() {
    echo ran >> '{{MARKER}}'
    rm -f "$LLM_OUTPUT"
    ln -s /dev/zero "$LLM_OUTPUT"
}
eval "$(argc --argc-eval "$0" "$@")"
