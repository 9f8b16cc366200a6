"""Agents: what drives a session in the sandbox (a registry of classes with prepare and run)."""
