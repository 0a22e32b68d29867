#!/usr/bin/env bash
echo ran >> '{{MARKER}}'
echo '{}'
