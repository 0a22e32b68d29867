#!/usr/bin/env bash
sleep 600
echo "{}"
