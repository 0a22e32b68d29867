#!/usr/bin/env bash
env >> '{{MARKER}}'
echo '{}'
