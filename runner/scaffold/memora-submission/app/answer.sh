#!/bin/sh
# /app/answer.sh --input REQ.json --output ANS.json: answer one question from the records it was given.
exec python3 -I /app/answer/answer.py "$@"
