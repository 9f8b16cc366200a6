"""A run folder's lock, run.json, as every command that reads a run reads it (report, view, cells, cell show, export,
compare, reproduce): the lock, or one line naming the file, what is wrong with it and the fix. Never a traceback:
a damaged lock is a reviewer's first sight of a run they were sent."""

import json
from pathlib import Path

from runner.errors import UserError

RESTORE = ("fix: restore run.json from where the run folder came from (the machine or archive that has it): it is "
           "the run's record of its inputs, which memgrid cannot rebuild")
# What every reader takes from a lock without asking: the run's id, its grid and the digests of its inputs.
REQUIRED = (("run_id", str, "a string"), ("grid", dict, "an object"), ("inputs", dict, "an object"))


def load_lock(run_dir: Path) -> dict:
    path = Path(run_dir) / "run.json"
    if not path.is_file():
        raise UserError(f"{path}: missing: fix: give a run id under runs/ or a run folder made by `memgrid grid`")
    try:
        lock = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise UserError(f"{path}: not JSON ({e.msg} at line {e.lineno}): {RESTORE}") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text: {RESTORE}") from None
    if not isinstance(lock, dict):
        raise UserError(f"{path}: a JSON {type(lock).__name__}, not a run's lock (an object): {RESTORE}")
    for field, kind, named in REQUIRED:
        if not isinstance(lock.get(field), kind):
            what = "missing" if field not in lock else f"not {named}"
            raise UserError(f"{path}: field {field}: {what}: {RESTORE}")
    return lock
