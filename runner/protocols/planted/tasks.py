"""The planted protocol's identity of a task: its folder, the split it ran under and, for a hosted task, what else
defines it (runner/units/planted.py holds the task and its loader)."""

from pathlib import Path

from runner.digest import sha256_bytes, sha256_json, tree_digest
from runner.units.planted import PlantedTask

OVERLAY_JUDGE = Path(__file__).resolve().parent / "stubs" / "overlay_check.py"  # a hosted task's check (check_shell)


def task_digest(task: PlantedTask, split_sha256: str) -> str:
    parts = {"task": tree_digest(task.root), "split": split_sha256}
    if task.hosted_digest is None:
        return sha256_json(parts)
    return sha256_json({**parts, "hosted": task.hosted_digest, "judge": sha256_bytes(OVERLAY_JUDGE.read_bytes())})
