#!/bin/sh
# Routes by the length of the prompt.
echo '{"_next": "easy"}'
