"""What a task's checker (the judge) uses to run the artifact's code: memgrid_check.

The judge runs as the `checker` user and may read /oracle; artifact code never runs in its process,
nor as its user. `run_artifact` asks memgrid-grade to run a command as the `artifact` user, who
cannot read /oracle and cannot reach the judge's process, and hands back what it printed. So:

- give the artifact run only **inputs**: expected values stay in the judge. Anything the run prints
  is the artifact's to forge; a judge trusts it only as far as the artifact could have computed it.
- `run_python(harness, args, stdin=...)` runs a harness script of the task's own (read here, by the
  judge, from /oracle) in a fresh `python3 -I -B`; its argv is `['-c', *args]`.
- `call(artifact, calls)` is the common case: import functions from the artifact and call them
  on inputs; each call comes back as an `Observed` (the value, its type and repr, or the exception).

Every run starts from nothing an earlier run left (memgrid-grade kills what it started and wipes
what it wrote) and is bounded by `timeout` seconds.
"""
import base64
import json
import os
import socket
import struct
from dataclasses import dataclass

__all__ = ["PYTHON", "ArtifactRun", "Observed", "RunnerError", "run_artifact", "run_python", "call"]

# Isolated: no PYTHON* variables, no user site, no script folder on the path, no bytecode written.
# (None is read from the artifact either: the export drops every .pyc, so the code run is the source shown.)
PYTHON = ["/usr/bin/python3", "-I", "-B"]


@dataclass(frozen=True)
class ArtifactRun:
    exit: int | None  # None: killed at the timeout
    timed_out: bool
    stdout: bytes
    stderr: bytes
    seconds: float

    def tail(self, n: int = 300) -> str:
        """The last line of stderr (else stdout), for a failure message."""
        for stream in (self.stderr, self.stdout):
            lines = stream.decode(errors="replace").strip().splitlines()
            if lines:
                return lines[-1][:n]
        return "no output"


class RunnerError(RuntimeError):
    """The runner channel is missing or refused the request: a fault of the grader, not the artifact."""


def _channel() -> socket.socket:
    fd = os.environ.get("MEMGRID_RUNNER_FD")
    if fd is None:
        raise RunnerError("no runner channel: the checker must be started by memgrid-grade")
    return socket.socket(fileno=int(fd))


def _recv_exact(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise RunnerError("the runner channel closed")
        data += chunk
    return data


def run_artifact(argv: list[str], *, stdin: bytes = b"", timeout: float) -> ArtifactRun:
    """Run `argv` as the artifact user (cwd and HOME its empty home, clean environment)."""
    conn = _channel()
    try:
        body = json.dumps({"argv": list(argv), "stdin": base64.b64encode(stdin).decode(), "timeout": timeout}).encode()
        conn.sendall(struct.pack(">I", len(body)) + body)
        answer = json.loads(_recv_exact(conn, struct.unpack(">I", _recv_exact(conn, 4))[0]))
    finally:
        conn.detach()  # the fd is the process's for its next request
    if "error" in answer:
        raise RunnerError(answer["error"])
    return ArtifactRun(answer["exit"], answer["timed_out"], base64.b64decode(answer["stdout"]),
                       base64.b64decode(answer["stderr"]), answer["seconds"])


def run_python(harness: str, args: list[str] = (), *, stdin: bytes = b"", timeout: float) -> ArtifactRun:
    """Run the harness script at `harness` (a path the judge reads) as artifact code's host process."""
    with open(harness, encoding="utf-8") as fh:
        source = fh.read()
    return run_artifact([*PYTHON, "-c", source, *args], stdin=stdin, timeout=timeout)


@dataclass(frozen=True)
class Observed:
    """One call into the artifact: what it returned (`type`, `value` when JSON can hold it, `repr`) or
    raised (`error`: the exception's class name, `message`)."""
    returned: bool
    type: str | None = None
    value: object = None
    repr: str | None = None
    error: str | None = None
    message: str | None = None


# The observer: imports each function from the artifact and calls it; one JSON line per call on its
# own copy of stdout (the artifact's prints go to stderr). Exceptions of every kind are caught per call.
_OBSERVER = r"""
import json, os, sys, importlib, signal
report = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
artifact, per_call = sys.argv[1], float(sys.argv[2])
calls = json.loads(sys.stdin.read())
sys.path.insert(0, artifact)
class CallTimeout(BaseException):
    pass
def on_alarm(*_):
    raise CallTimeout(f"no answer within {per_call}s")
signal.signal(signal.SIGALRM, on_alarm)
def plain(v, depth=0):
    if depth > 20:
        raise ValueError("too deep")
    t = type(v)
    if v is None or t in (bool, int, str):
        return v
    if t is float:
        return v if v == v and v not in (float("inf"), float("-inf")) else repr(v)
    if t in (list, tuple):
        return [plain(x, depth + 1) for x in v]
    if t is dict and all(type(k) is str for k in v):
        return {k: plain(x, depth + 1) for k, x in v.items()}
    raise ValueError("not plain")
def emit(rec):
    report.write(json.dumps(rec) + "\n")
    report.flush()
for i, c in enumerate(calls):
    try:
        signal.setitimer(signal.ITIMER_REAL, per_call)
        try:
            fn = getattr(importlib.import_module(c["module"]), c["function"])
            got = fn(*c.get("args", []), **c.get("kwargs", {}))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except BaseException as exc:
        try:
            msg = str(exc)[:2000]
        except BaseException:
            msg = "<unprintable>"
        emit({"i": i, "returned": False, "error": type(exc).__name__, "message": msg})
        if isinstance(exc, CallTimeout):
            break
        continue
    rec = {"i": i, "returned": True, "type": type(got).__name__}
    try:
        rec["repr"] = repr(got)[:2000]
    except BaseException:
        rec["repr"] = f"<unprintable {type(got).__name__}>"
    try:
        rec["value"] = plain(got)
    except BaseException:
        rec["value"] = None
    emit(rec)
emit({"done": len(calls)})
os._exit(0)
"""


def call(artifact: str, calls: list[dict], *, timeout: float = 30, per_call: float = 5) -> tuple[list[Observed | None], str | None]:
    """Call functions of the artifact: `calls` = [{"module": "shop.cart", "function": "parse_price",
    "args": [...], "kwargs": {...}}] (JSON inputs only). Returns one Observed per call (None for a call
    that never ran: an earlier one hung, or the process died) and a problem (None when the observer
    reported every call and said done)."""
    run = run_artifact([*PYTHON, "-c", _OBSERVER, artifact, str(per_call)], stdin=json.dumps(calls).encode(),
                       timeout=timeout)
    seen: list[Observed | None] = [None] * len(calls)
    done = False
    for line in run.stdout.decode(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            return seen, f"the artifact process printed something that is not a result: {line[:80]!r}"
        if not isinstance(rec, dict):
            return seen, f"the artifact process printed something that is not a result: {line[:80]!r}"
        if set(rec) == {"done"}:
            done = rec["done"] == len(calls)
            break
        i = rec.pop("i", None)
        if type(i) is not int or not 0 <= i < len(calls):
            return seen, f"the artifact process printed a malformed result: {line[:80]!r}"
        try:
            seen[i] = Observed(**rec)
        except TypeError:
            return seen, f"the artifact process printed a malformed result: {line[:80]!r}"
    if done:
        return seen, None
    ended = "was killed at the timeout" if run.timed_out else f"exited {run.exit}"
    return seen, f"the artifact process {ended} before reporting every call ({run.tail()})"
