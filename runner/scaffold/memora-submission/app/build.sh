#!/bin/sh
# /app/build.sh --corpus DIR --index-dir DIR: index the person's records (DIR/records.jsonl).
exec python3 -I /app/submission/build.py "$@"
