"""Execution: a run (job), its scheduler, and one cell (trial)."""
