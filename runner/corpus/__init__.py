"""Corpora: the seeded generator of each condition's earlier sessions."""
