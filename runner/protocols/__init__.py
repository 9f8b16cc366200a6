"""Protocols: what a cell is, its phases, how it is scored."""
