"""What a task's checker (the judge) uses to run the artifact's code: memgrid_check.

The judge runs as the `checker` user and may read /oracle; artifact code never runs in its process,
nor as its user. `run_artifact` asks memgrid-grade to run a command as the `artifact` user, who
cannot read /oracle and cannot reach the judge's process, and hands back what it printed. So:

- give the artifact run only **inputs**: expected values stay in the judge. Anything the run prints
  is the artifact's to forge; a judge trusts it only as far as the artifact could have computed it.
- `run_python(harness, args, stdin=...)` runs a harness script of the task's own (read here, by the
  judge, from /oracle) in a fresh `python3 -I -B`; its argv is `['-c', *args]`.
- `call(artifact, calls)` is the common case: import functions from the artifact and call them
  on inputs; each call comes back as an `Observed`: what it returned (its exact type, a judge-side copy
  `got` of the value to compare with ==) or raised (the exception's class and builtin bases).
  Arguments are Python values (None/bool/int/float/str/bytes/Decimal/date/datetime/time/list/tuple/
  dict) and `Ref(i)`, the value call i returned; `separate=True` runs each call in a process of its own,
  `helpers=` adds a task harness's functions (a call without "module") for what a plain call cannot do.
- `judge(total, checks)` is a planted-style judge's main: FAIL lines, SUMMARY, exit status;
  `expect`/`expect_raise` say why an Observed fails an expectation.

Every run starts from nothing an earlier run left (memgrid-grade kills what it started and wipes
what it wrote) and is bounded by `timeout` seconds.
"""
import binascii
import datetime
import decimal
import json
import os
import socket
import struct
import sys
import time as _time


# binascii and a record class of our own rather than base64 and the standard records: every judge and every
# observer run imports this module, and those two imports (re, inspect) cost more than the rest of it.
def _b64encode(data: bytes) -> bytes:
    return binascii.b2a_base64(data, newline=False)


def _b64decode(text, strict: bool = False) -> bytes:
    return binascii.a2b_base64(text, strict_mode=strict)


class _Record:
    """A small frozen record: its fields (in order) and their defaults."""
    _fields: tuple = ()
    _defaults: dict = {}

    def __init__(self, *args, **kwargs):
        if len(args) > len(self._fields):
            raise TypeError(f"{type(self).__name__} takes {len(self._fields)} fields")
        given = dict(zip(self._fields, args))
        for name, value in kwargs.items():
            if name not in self._fields or name in given:
                raise TypeError(f"{type(self).__name__}: unexpected or repeated field {name!r}")
            given[name] = value
        values = {**self._defaults, **given}
        missing = [n for n in self._fields if n not in values]
        if missing:
            raise TypeError(f"{type(self).__name__}: missing {missing}")
        for name in self._fields:
            object.__setattr__(self, name, values[name])

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is frozen")

    def _values(self) -> tuple:
        return tuple(getattr(self, n) for n in self._fields)

    def __eq__(self, other):
        return type(other) is type(self) and other._values() == self._values()

    def __hash__(self):
        return hash((type(self).__name__, self._values()))

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self._fields)})"

__all__ = ["PYTHON", "ArtifactRun", "Observed", "Opaque", "Ref", "RunnerError", "call", "decode", "encode", "expect",
           "expect_raise", "judge", "run_artifact", "run_python"]

# Isolated: no PYTHON* variables, no user site, no script folder on the path, no bytecode written.
# (None is read from the artifact either: the export drops every .pyc, so the code run is the source shown.)
PYTHON = ["/usr/bin/python3", "-I", "-B"]


class ArtifactRun(_Record):
    """exit (None: killed at the timeout), timed_out, stdout, stderr, seconds."""
    _fields = ("exit", "timed_out", "stdout", "stderr", "seconds")

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


def run_artifact(argv: list[str], *, stdin: bytes = b"", timeout: float, files: dict[str, bytes] | None = None,
                 cwd: str | None = None) -> ArtifactRun:
    """Run `argv` as the artifact user (HOME its empty home, clean environment). `files`: input files laid
    in that home first, by path relative to it (a CLI's input file: `HOME` is /home/artifact); `cwd`: that
    home (the default) or a folder inside /artifact (read-only to it)."""
    conn = _channel()
    try:
        body = json.dumps({"argv": list(argv), "stdin": _b64encode(stdin).decode(), "timeout": timeout, "cwd": cwd,
                           "files": {n: _b64encode(d).decode() for n, d in (files or {}).items()}}).encode()
        conn.sendall(struct.pack(">I", len(body)) + body)
        answer = json.loads(_recv_exact(conn, struct.unpack(">I", _recv_exact(conn, 4))[0]))
    finally:
        conn.detach()  # the fd is the process's for its next request
    if "error" in answer:
        raise RunnerError(answer["error"])
    return ArtifactRun(answer["exit"], answer["timed_out"], _b64decode(answer["stdout"]),
                       _b64decode(answer["stderr"]), answer["seconds"])


def run_python(harness: str, args: list[str] = (), *, stdin: bytes = b"", timeout: float) -> ArtifactRun:
    """Run the harness script at `harness` (a path the judge reads) as artifact code's host process."""
    with open(harness, encoding="utf-8") as fh:
        source = fh.read()
    return run_artifact([*PYTHON, "-c", source, *args], stdin=stdin, timeout=timeout)


# --- typed values: encoded where they were made (the artifact run), rebuilt in the judge ---------------------------
#
# ENCODED keeps what `==`, `is` and `type(v) is` tell apart. A plain value is [tag, payload], a value of a subclass
# [tag, payload, exact class name] (an IntEnum is ["i", 3, "Status"], a str subclass ["s", "x", "Name"]):
#   ["n"] None, ["b", x] bool, ["i", x] int, ["f", x] float, ["s", x] str, ["by", base64] bytes, ["dec", str] Decimal,
#   ["date", iso], ["dt", iso] datetime, ["time", iso], ["l", [...]] list, ["t", [...]] tuple, ["d", [[k, v], ...]] dict,
#   ["o", class name, repr] anything else (rebuilt as an Opaque: equal to nothing), ["ref", i] (arguments only:
#   what call i returned).
# The same functions run on both sides: this file is also the observer's source (see _observe).

_KINDS = [  # (tag, base, payload of an instance, read with the base's own methods, not the instance's)
    ("i", int, lambda v, d: int.__index__(v)),
    ("f", float, lambda v, d: float.__float__(v)),
    ("s", str, lambda v, d: str.__str__(v)),
    ("by", bytes, lambda v, d: _b64encode(bytes.__getitem__(v, slice(None))).decode()),
    ("dec", decimal.Decimal, lambda v, d: decimal.Decimal.__str__(v)),
    ("dt", datetime.datetime, lambda v, d: datetime.datetime.isoformat(v)),
    ("date", datetime.date, lambda v, d: datetime.date.isoformat(v)),
    ("time", datetime.time, lambda v, d: datetime.time.isoformat(v)),
    ("l", list, lambda v, d: [encode(x, d + 1) for x in list.__iter__(v)]),
    ("t", tuple, lambda v, d: [encode(x, d + 1) for x in tuple.__iter__(v)]),
    ("d", dict, lambda v, d: [[encode(k, d + 1), encode(x, d + 1)] for k, x in dict.items(v)]),
]


def _shown(v, n: int = 300) -> str:
    try:
        return repr(v)[:n]
    except BaseException:
        return f"<unprintable {type(v).__name__}>"


def encode(v, depth: int = 0) -> list:
    """The ENCODED form of `v` (a Ref stays a reference to an earlier call's result)."""
    t = type(v)
    if depth > 40:
        return ["o", t.__name__[:100], "<nested too deep>"]
    if v is None:
        return ["n"]
    if t is bool:
        return ["b", v]
    if t is Ref:
        return ["ref", v.index]
    for tag, base, payload in _KINDS:
        if isinstance(v, base):
            return [tag, payload(v, depth)] + ([] if t is base else [t.__name__[:100]])
    return ["o", t.__name__[:100], _shown(v)]


class Opaque:
    """A value of a type the encoding does not carry: equal to nothing (not even itself), shown by its repr."""

    def __init__(self, type_name: str, shown: str):
        self.type_name, self.shown = type_name, shown

    def __eq__(self, other):
        return False

    def __ne__(self, other):
        return True

    __hash__ = object.__hash__

    def __repr__(self):
        return f"<{self.type_name}: {self.shown}>"


class Ref(_Record):
    """An argument of a call: the value call `index` (of the same `call`) returned, the very object."""
    _fields = ("index",)


_SUBCLASSES: dict = {}


def _subclass(base: type, name: str) -> type:
    """A judge-side class named `name` deriving from `base` (no method of the artifact's): `type(v) is int` fails
    for it, `==` compares as the base does, `type(v).__name__` is the artifact's class name."""
    key = (base, name)
    if key not in _SUBCLASSES:
        if len(_SUBCLASSES) > 1000:
            raise ValueError("too many class names")
        _SUBCLASSES[key] = type(name, (base,), {"__module__": "artifact",
                                                "__repr__": lambda self: f"{name}({base.__repr__(self)})"})
    return _SUBCLASSES[key]


def _rebuild(tag: str, cls: type, x, depth: int):
    if tag == "i" and type(x) is int:
        return cls(x)
    if tag == "f" and type(x) in (int, float):
        return cls(x)
    if tag == "s" and type(x) is str:
        return cls(x)
    if tag == "by" and type(x) is str:
        return cls(_b64decode(x, strict=True))
    if tag == "dec" and type(x) is str:
        try:
            return cls(x)
        except decimal.InvalidOperation:
            raise ValueError("malformed Decimal") from None
    if tag in ("dt", "date", "time") and type(x) is str:
        return cls.fromisoformat(x)
    if tag in ("l", "t") and type(x) is list:
        return cls([decode(i, depth + 1) for i in x])
    if tag == "d" and type(x) is list:
        out = {}
        for pair in x:
            if type(pair) is not list or len(pair) != 2:
                raise ValueError("malformed dict item")
            out[decode(pair[0], depth + 1)] = decode(pair[1], depth + 1)  # TypeError: an unhashable key
        return out if cls is dict else cls(out)
    raise ValueError("malformed value")


_BASES = {tag: base for tag, base, _ in _KINDS}


def decode(enc, depth: int = 0, refs=None):
    """The value an ENCODED form stands for, rebuilt from judge-side classes only; ValueError/TypeError when it is
    malformed. ["ref", i] becomes refs[i] (KeyError when refs lack it) and is malformed without refs."""
    if depth > 41 or type(enc) is not list or not enc or type(enc[0]) is not str:
        raise ValueError("malformed value")
    tag, rest = enc[0], enc[1:]
    if tag == "n" and not rest:
        return None
    if tag == "b" and len(rest) == 1 and type(rest[0]) is bool:
        return rest[0]
    if tag == "o" and len(rest) == 2 and all(type(x) is str for x in rest):
        return Opaque(rest[0][:100], rest[1][:300])
    if tag == "ref" and refs is not None and len(rest) == 1 and type(rest[0]) is int:
        return refs[rest[0]]
    if tag not in _BASES or len(rest) not in (1, 2) or (len(rest) == 2 and type(rest[1]) is not str):
        raise ValueError("malformed value")
    cls = _BASES[tag] if len(rest) == 1 else _subclass(_BASES[tag], rest[1][:100])
    if tag in ("l", "t", "d") and refs is not None:  # an argument: its items may be references
        cls = _BASES[tag]
        if tag == "d":
            return {decode(k, depth + 1, refs): decode(x, depth + 1, refs) for k, x in _pairs(rest[0])}
        items = [decode(i, depth + 1, refs) for i in _items(rest[0])]
        return items if tag == "l" else tuple(items)
    return _rebuild(tag, cls, rest[0], depth)


def _items(x):
    if type(x) is not list:
        raise ValueError("malformed value")
    return x


def _pairs(x):
    for pair in _items(x):
        if type(pair) is not list or len(pair) != 2:
            raise ValueError("malformed dict item")
        yield pair


def _builtin_bases(t: type) -> list:
    """The builtin classes `t` derives from, by name (ValueError, LookupError, int, ...), nearest first."""
    try:
        return [c.__name__ for c in type.mro(t) if c.__module__ == "builtins"][:30]
    except BaseException:
        return []


# --- calls into the artifact ---------------------------------------------------------------------------------------

class Observed(_Record):
    """One call into the artifact: what it returned (`type`: its exact class name; `value` when JSON can hold it;
    `repr`; `got`: the value rebuilt judge-side, see decode) or raised (`error`: the exception's class name,
    `message`, `timed_out` when the call got no answer in time). `bases`: the builtin classes the value's or the
    exception's class derives from, by name (so `raised(ValueError)` holds for a subclass of ValueError too)."""
    _fields = ("returned", "type", "value", "repr", "error", "message", "got", "bases", "timed_out")
    _defaults = {"type": None, "value": None, "repr": None, "error": None, "message": None, "got": None, "bases": (),
                 "timed_out": False}

    def raised(self, exc: type | str) -> bool:
        """The call raised `exc` or a subclass of it (a builtin exception class, or its name)."""
        return not self.returned and (exc if isinstance(exc, str) else exc.__name__) in self.bases


# The observer: this very module run as `python3 -I -B -m memgrid_check --observe ARTIFACT PER_CALL`, with
# {"calls": [...], "helpers": source or null} on stdin. It imports each function from the artifact (or the helpers'
# namespace, for a call without "module") and calls it; one JSON line per call on its own copy of stdout (the
# artifact's prints go to stderr). Exceptions of every kind are caught per call; after a timeout nothing more runs.
def _observe() -> None:
    import importlib
    import signal

    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    artifact, per_call = sys.argv[2], float(sys.argv[3])
    request = json.loads(sys.stdin.read())
    sys.path.insert(0, artifact)

    class CallTimeout(BaseException):
        pass

    class RefError(Exception):
        pass

    def on_alarm(*_):
        raise CallTimeout(f"no answer within {per_call}s")

    signal.signal(signal.SIGALRM, on_alarm)

    def emit(rec):
        report.write(json.dumps(rec) + "\n")
        report.flush()

    def plain(v, depth=0):
        t = type(v)
        if depth > 20:
            raise ValueError("too deep")
        if v is None or t in (bool, int, str):
            return v
        if t is float:
            return v if v == v and v not in (float("inf"), float("-inf")) else repr(v)
        if t in (list, tuple):
            return [plain(x, depth + 1) for x in v]
        if t is dict and all(type(k) is str for k in v):
            return {k: plain(x, depth + 1) for k, x in v.items()}
        raise ValueError("not plain")

    helpers, helpers_error = {"__name__": "helpers"}, None
    results = {}

    def function(c):
        if helpers_error is not None:
            raise helpers_error
        if c.get("module") is None:
            return helpers[c["function"]]
        return getattr(importlib.import_module(c["module"]), c["function"])

    class Refs:
        def __getitem__(self, i):
            if i not in results:
                raise RefError(f"call {i}, whose result this call takes, did not return")
            return results[i]

    for i, c in enumerate(request["calls"]):
        try:
            signal.setitimer(signal.ITIMER_REAL, per_call)
            try:
                if i == 0 and request.get("helpers") is not None:
                    try:
                        exec(compile(request["helpers"], "helpers", "exec"), helpers)
                    except BaseException as exc:
                        helpers_error = exc
                args = [decode(a, refs=Refs()) for a in c.get("args", [])]
                kwargs = {k: decode(a, refs=Refs()) for k, a in c.get("kwargs", [])}
                got = function(c)(*args, **kwargs)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except BaseException as exc:
            try:
                msg = str(exc)[:2000]
            except BaseException:
                msg = "<unprintable>"
            emit({"i": i, "returned": False, "error": type(exc).__name__[:100], "message": msg,
                  "bases": _builtin_bases(type(exc)), "timed_out": isinstance(exc, CallTimeout)})
            if isinstance(exc, CallTimeout):
                break
            continue
        results[i] = got
        rec = {"i": i, "returned": True, "type": type(got).__name__[:100], "repr": _shown(got, 2000),
               "bases": _builtin_bases(type(got))}
        try:
            rec["value"] = plain(got)
        except BaseException:
            rec["value"] = None
        try:
            rec["enc"] = encode(got)
            json.dumps(rec["enc"])
        except BaseException:
            rec["enc"] = ["o", rec["type"], rec["repr"][:300]]
        emit(rec)
    emit({"done": len(request["calls"])})


_RETURNED = {"i", "returned", "type", "repr", "value", "enc", "bases"}
_RAISED = {"i", "returned", "error", "message", "bases", "timed_out"}


def _record(rec) -> Observed:
    """The Observed a result line stands for; ValueError/TypeError when it is malformed."""
    if type(rec.get("bases")) is not list or not all(type(b) is str for b in rec["bases"]):
        raise ValueError("malformed bases")
    bases = tuple(rec["bases"])
    if rec.get("returned") is True and set(rec) == _RETURNED and type(rec["type"]) is str and type(rec["repr"]) is str:
        return Observed(True, type=rec["type"], value=rec["value"], repr=rec["repr"], got=decode(rec["enc"]),
                        bases=bases)
    if (rec.get("returned") is False and set(rec) == _RAISED and type(rec["error"]) is str
            and type(rec["message"]) is str and type(rec["timed_out"]) is bool):
        return Observed(False, error=rec["error"], message=rec["message"], bases=bases, timed_out=rec["timed_out"])
    raise ValueError("malformed result")


def _wire(c: dict, separate: bool) -> dict:
    out = {"module": c.get("module"), "function": c["function"]}
    out["args"] = [encode(a) for a in c.get("args", [])]
    out["kwargs"] = [[k, encode(a)] for k, a in c.get("kwargs", {}).items()]  # a list: the order stays
    if separate and any(_has_ref(a) for a in [*out["args"], *(a for _, a in out["kwargs"])]):
        raise ValueError("a call that takes an earlier call's result cannot run separately")
    return out


def _has_ref(enc) -> bool:
    return isinstance(enc, list) and (enc[:1] == ["ref"] or any(_has_ref(x) for x in enc[1:]))


def _run_calls(artifact, calls, helpers, timeout, per_call) -> tuple[list, str | None]:
    request = {"calls": calls, "helpers": helpers}
    # -m: the image's compiled copy of this module (system site, read-only), not a compile per run
    run = run_artifact([*PYTHON, "-m", "memgrid_check", "--observe", artifact, str(per_call)],
                       stdin=json.dumps(request).encode(), timeout=timeout)
    seen: list[Observed | None] = [None] * len(calls)
    reported, done = 0, False
    try:
        lines = run.stdout.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return seen, "the artifact process printed something that is not UTF-8"
    for line in lines:
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            rec = None
        if not isinstance(rec, dict) or done:
            return seen, f"the artifact process printed something that is not a result: {line[:80]!r}"
        if set(rec) == {"done"}:
            done = rec["done"] == len(calls)
            if not done:
                return seen, f"the artifact process printed a malformed result: {line[:80]!r}"
            continue
        try:
            if rec.get("i") != reported or type(rec.get("i")) is not int or reported >= len(calls):
                raise ValueError("not the next call")
            seen[reported] = _record(rec)
        except (ValueError, TypeError, KeyError, RecursionError):
            return seen, f"the artifact process printed a malformed result: {line[:80]!r}"
        reported += 1
    if done:
        return seen, None
    ended = "was killed at the timeout" if run.timed_out else f"exited {run.exit}"
    return seen, f"the artifact process {ended} before reporting every call ({run.tail()})"


def call(artifact: str, calls: list[dict], *, timeout: float = 30, per_call: float = 5, separate: bool = False,
         helpers: str | None = None) -> tuple[list[Observed | None], str | None]:
    """Call functions of the artifact: `calls` = [{"module": "shop.cart", "function": "parse_price",
    "args": [...], "kwargs": {...}}], inputs only (see encode for the values an argument may hold; `Ref(i)` is what
    call i returned, the same object). A call without "module" names a function of `helpers`, a harness script of
    the task's (a path the judge reads) run in the artifact's process, for what one plain call cannot do.
    `separate`: each call in a process of its own (one case's input may be another's expected value), all within
    `timeout`. Returns one Observed per call (None for a call that never ran: an earlier one hung, or the process
    died) and a problem (None when every process reported every call it was given and said done)."""
    source = None
    if helpers is not None:
        with open(helpers, encoding="utf-8") as fh:
            source = fh.read()
    wire = [_wire(c, separate) for c in calls]
    if not separate:
        return _run_calls(artifact, wire, source, timeout, per_call)
    deadline = _time.monotonic() + timeout
    seen, problems = [], []
    for c in wire:
        left = deadline - _time.monotonic()
        if left <= 0:
            seen.append(None)
            problems.append(f"no time left for {c['function']} within {timeout}s")
            continue
        one, problem = _run_calls(artifact, [c], source, left, per_call)
        seen += one
        if problem is not None:
            problems.append(problem)
    return seen, "; ".join(problems)[:2000] or None


# --- a planted-style judge: one FAIL line per failed check, then SUMMARY ------------------------------------------

def short(value, n: int = 200) -> str:
    return repr(value)[:n]


def _not_returned(o: Observed | None, problem: str | None) -> str:
    if o is None:
        return f"gave no result: {problem or 'not run after an earlier call timed out'}"
    return f"raised {o.error}: {(o.message or '')[:200]}" + (" (timed out)" if o.timed_out else "")


def expect(what: str, o: Observed | None, problem: str | None, ok, wanted: str) -> str | None:
    """None when the call `what` returned a value `ok(got)` accepts; else why not, as a FAIL line says it."""
    if o is None or not o.returned:
        return f"{what} {_not_returned(o, problem)}"
    if ok(o.got):
        return None
    return f"{what} returned {short(o.got)}, a {type(o.got).__name__}, expected {wanted}"


def expect_raise(what: str, o: Observed | None, problem: str | None, exc: type) -> str | None:
    """None when the call `what` raised `exc` or a subclass of it; else why not."""
    if o is not None and o.raised(exc):
        return None
    if o is not None and o.returned:
        return f"{what} returned {short(o.got)}, expected {exc.__name__}"
    return f"{what} {_not_returned(o, problem)}" + ("" if o is None else f", expected {exc.__name__}")


def judge(total: int, checks) -> None:
    """Main of a judge `python3 check.py ARTIFACT_DIR`: `checks(artifact)` yields (test, why) per check, why None
    when it passed, and (None, problem) for a run that went wrong (no check, but the judge fails). Prints
    `FAIL <test>: <why>` per failed check, `FAIL run: <problem>`, then `SUMMARY: <passed>/<total> checks passed`;
    exits 0 only when all `total` checks ran and passed and no run went wrong. A crash of the judge exits 1."""
    try:
        if len(sys.argv) != 2:
            print("usage: check.py ARTIFACT_DIR")
            sys.exit(1)
        passed = count = 0
        problems = []
        for test, why in checks(os.path.abspath(sys.argv[1])):
            if test is None:
                if why is not None:
                    problems.append(why)
                continue
            count += 1
            if why is None:
                passed += 1
            else:
                print(f"FAIL {test}: {why}")
        for problem in problems:
            print(f"FAIL run: {problem}")
        if count != total:  # a judge bug, never a pass
            print(f"FAIL checker: ran {count} checks, expected {total}")
            passed = min(passed, total - 1)
        print(f"SUMMARY: {passed}/{total} checks passed")
        code = 0 if passed == total and count == total and not problems else 1
    except BaseException as exc:
        print(f"FAIL checker: checker error: {type(exc).__name__}: {exc}")
        print(f"SUMMARY: 0/{total} checks passed")
        code = 1
    sys.stdout.flush()
    sys.exit(code)


if __name__ == "__main__" and sys.argv[1:2] == ["--observe"]:
    try:
        _observe()
    except BaseException:
        pass
    os._exit(0)  # no atexit hooks or lingering threads of the artifact after the report
