"""The checker (Harbor's verifier): grades the exported artifact in a fresh container.

Network none, the artifact at /artifact (root-owned, read-only for all) and the oracle at /oracle
(readable by the judge's group alone). The oracle never enters the agent's container, and in this one
only the judge (the task's checker and detector, user `checker`) reads it: artifact code runs as
another user (`artifact`), through memgrid_check, on the inputs the judge hands it. The task's checker
runs first (exit 0 = pass; timeout or crash = fail, with the detail recorded), then its damage
detector, which names the conditions whose wrong rule it recognises in the artifact. memgrid-grade's
output, written by root once every process either user started is gone, is the grade and nothing else;
no process of the judge or the artifact can write to it (images/checker/memgrid-grade says why).

The container may be started ahead of need (a coding cell starts it beside its sandbox, so its start
overlaps the session instead of following it): until its inputs arrive it only sleeps, and nothing but
the harness's own `memgrid-grade` is ever run in it.
"""

import json
import threading
import time
from dataclasses import dataclass
from pathlib import PurePosixPath

from runner.env.archive import Entry, is_bytecode, pack
from runner.env.bundle import tree_entries
from runner.env.containers import CELL_LABEL, ROLE_LABEL, RUN_LABEL, Limits, hardened, remove_quietly
from runner.env.sandbox import exec_in, expiry_checked, lifetime_ran_out
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


JUDGE_GID = 1001  # the checker image's `checker` group: the judge's, never the artifact user's
ARTIFACT_UID = 1002  # the checker image's `artifact` user
# The artifact user's home, the one folder of the container it can write (besides /dev/shm, 64 MiB): a tmpfs of a
# fixed size, whose pages count in the container's memory limit. On the container's own layer its writes went to the
# engine's disk, unbounded: artifact code could fill the disk the runs folder shares within one run's timeout.
ARTIFACT_HOME_MIB = 256


def grading_inputs(artifact: list[Entry], oracle: list[Entry]) -> bytes:
    """/artifact readable by everyone (the artifact user runs it), /oracle by the judge's group alone;
    `oracle` entries are named oracle/..., `artifact` entries relative to the workspace."""
    # The export drops compiled Python already (and records it); an artifact from anywhere else is held to
    # the same rule here, so what is graded is always the source shown.
    readable = [Entry(f"artifact/{e.path}", e.data, 0o555 if e.mode & 0o111 else 0o444) for e in artifact
                if not is_bytecode(PurePosixPath(e.path))]
    judged = [Entry(e.path, e.data, 0o550 if e.mode & 0o111 else 0o440) for e in oracle]
    return pack(readable, uid=0, gid=0, dir_mode=0o555, also=(judged, 0, JUDGE_GID, 0o750))


def checker_inputs(task: TaskSpec, artifact: list[Entry]) -> bytes:
    return grading_inputs(artifact, tree_entries(task.oracle, "oracle"))


def parse_grade(stdout: str) -> dict | None:
    """memgrid-grade's output is the grade and nothing else (one JSON object); anything more or less is none."""
    try:
        grade = json.loads(stdout)
    except ValueError:
        return None
    return grade if isinstance(grade, dict) and isinstance(grade.get("checker"), dict) else None


class CheckerContainer:
    """A fresh checker container for one grade. `start` may run on another thread while the cell does
    other work; `stop` removes the container whenever it is called, a start still under way included
    (a container created after `stop` is removed at once). `lifetime` bounds how long it sleeps waiting
    for its inputs, so a dead controller leaves it behind no longer than that."""

    def __init__(self, client, image: str, spec: dict, *, run_id: str, cell_id: str, limits: Limits = Limits(),
                 lifetime: int):
        self.client, self.lifetime = client, lifetime
        # memgrid-grade switches to the judge's and the artifact's users and gives the judge a fresh home:
        # those three capabilities and no other. The engine grants an exec capabilities only in a container
        # started as root; its own process only sleeps.
        self.args = hardened(image, user="root", network="none", limits=limits,
                             labels={RUN_LABEL: run_id, CELL_LABEL: cell_id, ROLE_LABEL: "checker"},
                             command=["sleep", str(lifetime)], working_dir="/tmp",
                             cap_add=["SETUID", "SETGID", "CHOWN"], init=True,  # init reaps what a run orphans
                             tmpfs={"/home/artifact": f"size={ARTIFACT_HOME_MIB}m,mode=0755,uid={ARTIFACT_UID},"
                                                      f"gid={ARTIFACT_UID}"},
                             environment={"PYTHONDONTWRITEBYTECODE": "1", "MEMGRID_GRADE": json.dumps(spec)})
        self.container = None
        self._lock = threading.Lock()
        self._stopped = False

    def start(self) -> None:
        container = self.client.containers.create(**self.args)
        with self._lock:
            stopped = self._stopped
            if not stopped:
                self.container = container
        if stopped:
            remove_quietly(container)
            raise RuntimeError("the checker container was stopped before it started")
        container.start()

    def grade(self, inputs_tar: bytes, bound: float) -> tuple[dict | None, str, float]:
        """memgrid-grade over `inputs_tar` (placed at /): its result (None when it gave none within `bound`
        seconds), its output, and the seconds it took."""
        started = time.monotonic()
        # A grade cut short because the container outlived its lifetime (the controller frozen past it) is no verdict
        # on the artifact: the cell is discarded sandbox_expired and runs again.
        with expiry_checked(self.expired):
            if not self.container.put_archive("/", inputs_tar):
                raise RuntimeError("placing the checker's inputs was refused")
            result = exec_in(self.client, self.container.id, ["memgrid-grade"], timeout=max(1, int(bound)),
                             workdir="/tmp", user="root")
        grade = parse_grade(result.stdout) if result.exit_code == 0 and not result.dropped_bytes else None
        log = (grade["checker"].get("output", "") if grade else result.stdout) + (f"\n{result.stderr}" if result.stderr else "")
        return grade, log, round(time.monotonic() - started, 3)

    def expired(self) -> str | None:
        return lifetime_ran_out(self.container, f"the checker container's lifetime of {self.lifetime}s", "the grade")

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            container, self.container = self.container, None
        if container is not None:
            remove_quietly(container)


def grade_in_container(client, image: str, inputs_tar: bytes, spec: dict, bound: float, *, run_id: str, cell_id: str,
                       limits: Limits = Limits()) -> tuple[dict | None, str, float]:
    """memgrid-grade in a fresh checker container over `inputs_tar` (placed at /): its result (None when it
    gave none within `bound` seconds), its output, and the seconds it took."""
    checker = CheckerContainer(client, image, spec, run_id=run_id, cell_id=cell_id, limits=limits,
                               lifetime=int(bound) + GRACE_SECONDS)
    try:
        checker.start()
        return checker.grade(inputs_tar, bound)
    finally:
        checker.stop()


def checker_spec(task: TaskSpec) -> dict:
    return {"checker": {"command": list(task.checker.command), "timeout": task.checker.timeout_seconds},
            "detector": {"command": list(task.detector.command), "timeout": task.detector.timeout_seconds}}


def checker_bound(task: TaskSpec) -> int:
    """How long a grade may take in all: the checker's and the detector's own timeouts, and a grace."""
    return task.checker.timeout_seconds + task.detector.timeout_seconds + GRACE_SECONDS


def run_checker(client, image: str, task: TaskSpec, artifact: list[Entry], *, run_id: str, cell_id: str,
                limits: Limits = Limits(), container: CheckerContainer | None = None) -> tuple[CheckerVerdict, str]:
    """Returns the verdict and the checker's own output (for checker.log). `container`: one started ahead
    for this task (`checker_spec`); the caller removes it. Without it, a container is started here."""
    bound = checker_bound(task)
    if container is None:
        grade, log, seconds = grade_in_container(client, image, checker_inputs(task, artifact), checker_spec(task),
                                                 bound, run_id=run_id, cell_id=cell_id, limits=limits)
    else:
        grade, log, seconds = container.grade(checker_inputs(task, artifact), bound)
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
