"""Two-session recall: a ledger value shown in session 1, asked for in a fresh session 2."""
