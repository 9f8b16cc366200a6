"""The checker (Harbor's verifier): grades the exported artifact in a fresh container.

Network none, the artifact at /artifact and the oracle at /oracle, both root-owned and read-only
for the non-root checker user. The oracle never enters the agent's container. Exit 0 = pass;
timeout or crash = fail, with the detail recorded.
"""

import time
from dataclasses import dataclass

import requests

from .archive import Entry, pack
from .bundle import tree_entries
from .sandbox import CELL_LABEL, ROLE_LABEL, RUN_LABEL, Limits, hardened, remove_quietly
from .spec import TaskSpec

GRACE_SECONDS = 30


@dataclass(frozen=True)
class CheckerVerdict:
    passed: bool
    exit_code: int | None
    timed_out: bool
    detail: str
    seconds: float


def checker_inputs(task: TaskSpec, artifact: list[Entry]) -> bytes:
    entries = [Entry(f"artifact/{e.path}", e.data, 0o555 if e.mode & 0o111 else 0o444) for e in artifact]
    entries += [Entry(e.path, e.data, 0o555 if e.mode & 0o111 else 0o444) for e in tree_entries(task.oracle, "oracle")]
    return pack(entries, uid=0, gid=0, dir_mode=0o555)


def run_checker(client, image: str, task: TaskSpec, artifact: list[Entry], *, run_id: str, cell_id: str,
                limits: Limits = Limits()) -> tuple[CheckerVerdict, str]:
    """Returns the verdict and the checker's combined output (for checker.log)."""
    timeout = task.checker.timeout_seconds
    args = hardened(image, user="checker", network="none", limits=limits,
                    labels={RUN_LABEL: run_id, CELL_LABEL: cell_id, ROLE_LABEL: "checker"},
                    command=["timeout", "--kill-after=5", str(timeout), *task.checker.command],
                    environment={"PYTHONDONTWRITEBYTECODE": "1"}, working_dir="/tmp")
    started = time.monotonic()
    container = client.containers.create(**args)
    try:
        container.put_archive("/", checker_inputs(task, artifact))
        container.start()
        try:
            code = container.wait(timeout=timeout + GRACE_SECONDS)["StatusCode"]
        except (requests.exceptions.Timeout, requests.exceptions.ConnectionError):  # our bound ran out first
            container.kill()
            code = None
        log = container.logs(stdout=True, stderr=True).decode(errors="replace")
    finally:
        remove_quietly(container)
    seconds = time.monotonic() - started
    timed_out = code is None or code in (124, 137)
    if code == 0:
        detail = "exit 0"
    elif timed_out:
        detail = f"timed out after {timeout}s"
    else:
        last = next((l for l in reversed(log.strip().splitlines()) if l.strip()), "")
        detail = f"exit {code}: {last[:300]}"
    return CheckerVerdict(code == 0, code, timed_out, detail, round(seconds, 3)), log
