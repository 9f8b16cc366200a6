"""Grading: the admission gate and the checker."""
