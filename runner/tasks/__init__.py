"""Tasks: `memgrid task check` and `memgrid task import`."""
