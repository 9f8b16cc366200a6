"""Floor stub: admits it remembers nothing. Must score 0: UNKNOWN is never credited."""

print("UNKNOWN")
