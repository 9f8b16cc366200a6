"""What the Docker benchmarks share: cleanup by run label and a count of other runs skewing timings."""

from runner.env.sandbox import RUN_LABEL, remove_run_containers


def cleanup(client, run_id: str) -> int:
    """Remove this run's containers by its run label; returns how many were left over."""
    left = len(client.containers.list(all=True, ignore_removed=True, filters={"label": f"{RUN_LABEL}={run_id}"}))
    remove_run_containers(client, run_id)
    return left


def foreign_containers(client, run_id: str) -> int:
    """memgrid containers of other runs (a test suite, another grid) sharing the engine: they skew the timings."""
    return sum(c.labels.get(RUN_LABEL) != run_id for c in client.containers.list(ignore_removed=True, filters={"label": RUN_LABEL}))
