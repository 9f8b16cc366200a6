"""Synthetic stand-in for amb's harness package: its __init__ needs what a checker image lacks."""
import amb_only_dependency  # noqa: F401
