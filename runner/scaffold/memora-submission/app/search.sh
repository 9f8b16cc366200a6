#!/bin/sh
# /app/search.sh --index-dir DIR --queries Q.jsonl --output R.jsonl: the records each question needs.
exec python3 -I /app/submission/search.py "$@"
