#!/usr/bin/env bash
echo ran >> '{{MARKER}}'
head -c 100000000 /dev/zero | tr '\0' 'a'
