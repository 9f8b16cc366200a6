"""Spec and plan: the YAML specs, the grid's cells, preregistrations and reproduction."""
