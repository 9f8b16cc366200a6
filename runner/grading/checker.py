"""The checker (Harbor's verifier): grades the exported artifact in a fresh container.

Network none, the artifact at /artifact and the oracle at /oracle, both root-owned and read-only
for the non-root checker user. The oracle never enters the agent's container. The task's checker
runs first (exit 0 = pass; timeout or crash = fail, with the detail recorded), then its damage
detector, which names the conditions whose wrong rule it recognises in the artifact.
"""

import json
import time
from dataclasses import dataclass

import requests

from runner.env.archive import Entry, pack
from runner.env.bundle import tree_entries
from runner.env.sandbox import CELL_LABEL, ROLE_LABEL, RUN_LABEL, Limits, hardened, remove_quietly
from runner.plan.spec import TaskSpec

GRACE_SECONDS = 30


@dataclass(frozen=True)
class CheckerVerdict:
    passed: bool
    exit_code: int | None
    timed_out: bool
    detail: str
    seconds: float
    fired: tuple[str, ...] | None  # conditions the damage detector recognised; None: it gave no report
    detector_detail: str


def checker_inputs(task: TaskSpec, artifact: list[Entry]) -> bytes:
    entries = [Entry(f"artifact/{e.path}", e.data, 0o555 if e.mode & 0o111 else 0o444) for e in artifact]
    entries += [Entry(e.path, e.data, 0o555 if e.mode & 0o111 else 0o444) for e in tree_entries(task.oracle, "oracle")]
    return pack(entries, uid=0, gid=0, dir_mode=0o555)


def _last_json_line(log: str) -> dict | None:
    for line in reversed(log.strip().splitlines()):
        try:
            return json.loads(line)
        except json.JSONDecodeError:
            return None
    return None


def grade_in_container(client, image: str, inputs_tar: bytes, spec: dict, bound: float, *, run_id: str, cell_id: str,
                       limits: Limits = Limits()) -> tuple[dict | None, str, float]:
    """memgrid-grade in a fresh checker container over `inputs_tar` (placed at /): its result (None when it
    gave none within `bound` seconds), its output, and the seconds it took."""
    args = hardened(image, user="checker", network="none", limits=limits,
                    labels={RUN_LABEL: run_id, CELL_LABEL: cell_id, ROLE_LABEL: "checker"},
                    command=["memgrid-grade"], working_dir="/tmp",
                    environment={"PYTHONDONTWRITEBYTECODE": "1", "MEMGRID_GRADE": json.dumps(spec)})
    started = time.monotonic()
    container = client.containers.create(**args)
    try:
        container.put_archive("/", inputs_tar)
        container.start()
        try:
            container.wait(timeout=bound)
        except (requests.exceptions.Timeout, requests.exceptions.ConnectionError):  # our bound ran out first
            container.kill()
        log = container.logs(stdout=True, stderr=True).decode(errors="replace")
    finally:
        remove_quietly(container)
    return _last_json_line(log), log, round(time.monotonic() - started, 3)


def run_checker(client, image: str, task: TaskSpec, artifact: list[Entry], *, run_id: str, cell_id: str,
                limits: Limits = Limits()) -> tuple[CheckerVerdict, str]:
    """Returns the verdict and the checker's own output (for checker.log)."""
    spec = {"checker": {"command": list(task.checker.command), "timeout": task.checker.timeout_seconds},
            "detector": {"command": list(task.detector.command), "timeout": task.detector.timeout_seconds}}
    bound = task.checker.timeout_seconds + task.detector.timeout_seconds + GRACE_SECONDS
    grade, log, seconds = grade_in_container(client, image, checker_inputs(task, artifact), spec, bound,
                                             run_id=run_id, cell_id=cell_id, limits=limits)
    if grade is None:
        detail = f"the grader gave no result within {bound}s: {log.strip()[-300:]!r}"
        return CheckerVerdict(False, None, True, detail, seconds, None, "not run"), log
    checker, detector = grade["checker"], grade["detector"]
    output = checker["output"]
    if checker["timed_out"]:
        detail = f"timed out after {task.checker.timeout_seconds}s"
    elif checker["exit"] == 0:
        detail = "exit 0"
    else:
        last = next((l for l in reversed(output.strip().splitlines()) if l.strip()), "")
        detail = f"exit {checker['exit']}: {last[:300]}"
    fired = tuple(detector["fired"]) if detector.get("fired") is not None else None
    detector_detail = detector.get("error") or ("timed out" if detector["timed_out"] else f"fired {list(fired)}")
    return CheckerVerdict(checker["exit"] == 0, checker["exit"], checker["timed_out"], detail, seconds,
                          fired, detector_detail), output


def outcome_of(verdict: CheckerVerdict, condition: str) -> str:
    """solved / damaged / neutral_failure / ambiguous, from the verdict and the detector.

    damaged: failed, and the detector recognised this condition's wrong rule. ambiguous: the
    detector contradicts the verdict, names another condition's rule, or gave no report.
    """
    if verdict.fired is None:
        return "solved" if verdict.passed else "ambiguous"
    if verdict.passed:
        return "ambiguous" if verdict.fired else "solved"
    if not verdict.fired:
        return "neutral_failure"
    return "damaged" if verdict.fired == (condition,) else "ambiguous"
