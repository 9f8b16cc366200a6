"""`memgrid task import PATH --format amb`: agent-memory-bench tasks as memgrid tasks.

An agent-memory-bench (amb) checkout keeps a task as `tasks/<id>/` (task.json, tree/ and dirty/,
checker.py, damage.py, reference/*.py with `apply(workdir)`, precursors/pNN/, plants.json and
plants/<name>/), its held-out checker inputs in `oracles/<id>/`, its recorded sessions in
`corpus/sessions/<id>/pNN.jsonl` and `corpus/plants/<id>/<name>.jsonl`, and the helpers its
checkers import in `harness/`. Everything a task needs is decided first (a `Plan`: the files to
write, keyed by path under the project root); a task that cannot be mapped faithfully raises
`Refused` with one line, and the others go on. Nothing is written on a dry run.

The tasks go into a suite of their own (tasks/<suite>/, created with suite.yaml and its corpus settings
corpus/suites/<suite>/corpus.yaml when new): memgrid's own suite, its corpus, store digests and cell ids
are not touched by an import (runner/plan/spec.py SuiteSpec).

The checker and the damage detector run unchanged: oracle/check.py and oracle/detect.py are
wrappers that call amb's `check(workdir, oracle_dir)` and `detect(workdir, oracle_dir, condition)`
in a child process, on a writable copy of the artifact, and judge only a complete report. That
process is the judge (it can read /oracle): amb's checkers run artifact code through one function,
`harness/checker_run.py` `run_bounded`, and the import writes memgrid's own version of that module
(CHECKER_RUN), which runs the command as the artifact user through memgrid_check. A checker, detector
or vendored harness module that could run artifact code another way (subprocess, os.system/exec*/
spawn*, multiprocessing, runpy, importlib, exec/eval/compile/__import__, sys.path.insert/append) is
imported but marked by name (task.yaml `checker.unisolated`): no grid grades it unless it names the task
under `unisolated_checkers`.
"""

import ast
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from importlib import util as importlib_util
from pathlib import Path

import yaml

from runner.digest import sha256_bytes, sha256_json, tree_files
from runner.errors import SpecError, UserError
from runner.plan.spec import suite_of_task, validate
from runner.sources.base import ImportResult, Refusal, Refused, Source, SourceFormat, suite_folder

SOURCE_REPOSITORY = "GiulioDER/agent-memory-bench"
ROLE_OF = {"superseded": "stale", "contradictory": "rival", "adjacent": "adjacent"}
# amb runs a checker in-process with no bound of its own; its helpers bound what they spawn at 60-120 s.
CHECKER_SECONDS = 300
APPLY_SECONDS = 60
MIN_MARKER = 4  # runner/schemas/task.schema.json: wrong-rule markers are at least 4 characters
SKIP = frozenset({".git", "__pycache__", ".pytest_cache", ".ruff_cache"})
# What the checker image lacks: amb fixtures are git repositories and its shell helpers need bash.
NEEDS_GIT_OR_BASH = {"git", "git_bash", "run_bash"}
CLAUDE_MD_RULES = ("Keep changes small and focused, and leave unrelated files alone.",
                   "Read the README and the code before you change anything.")


@dataclass(frozen=True)
class Plan:
    """One importable task: every file to write (path under the project root -> bytes) and what was mapped how."""
    source: Path
    task_id: str
    task_root: str  # the task folder, under the project root
    conditions: tuple[str, ...]
    files: dict[str, bytes]
    notes: tuple[str, ...]
    unisolated: str | None = None  # why its checker is not isolated (task.yaml checker.unisolated); None: it is

    def line(self) -> str:
        return (f"import {self.source.name} -> {self.task_root}: conditions {', '.join(self.conditions)}; "
                f"{len(self.files)} files" + (f"; {'; '.join(self.notes)}" if self.notes else ""))

    def unisolated_line(self) -> str | None:
        if self.unisolated is None:
            return None
        return (f"unisolated {self.task_id}: {self.unisolated}; marked checker.unisolated in its task.yaml, so a grid "
                f"grades it only when it names it under unisolated_checkers — to isolate it: {RUN_BOUNDED_ONLY}")


def find_tasks(path: Path) -> tuple[Source, list[Path]]:
    """One task folder (it holds task.json) or a folder of them; the checkout is the tasks folder's parent."""
    if not path.is_dir():
        raise UserError(f"{path}: (folder): does not exist or is not a folder — fix: give an amb task folder "
                        "(tasks/<id>/ with task.json) or an amb tasks/ folder")
    if (path / "task.json").is_file():
        return Source(path.resolve().parent.parent, "amb"), [path.resolve()]
    tasks = sorted(p.resolve() for p in path.iterdir() if p.is_dir() and (p / "task.json").is_file())
    if not tasks:
        raise UserError(f"{path}: (folder): holds no task.json and no task folders with one — fix: give an amb "
                        "task folder (tasks/<id>/ with task.json) or an amb tasks/ folder")
    return Source(path.resolve().parent, "amb"), tasks


def memgrid_id(amb_id: str) -> str:
    return "amb_" + amb_id.lower().replace("-", "_")


def read_json(path: Path, src: Source) -> dict:
    src.inside(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))  # a byte-order mark is the file's, not the JSON's
    except FileNotFoundError:
        raise Refused(src.rel(path), "(file)", "is missing", "add it") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise Refused(src.rel(path), "(file)", f"is not JSON ({e})", "repair the JSON") from None
    if not isinstance(data, dict):
        raise Refused(src.rel(path), "(top level)", "is not a JSON object", "write an object of fields")
    return data


def files_under(root: Path, src: Source | None = None) -> dict[str, bytes]:
    """Regular files under root by relative path, without caches and .git; links are refused, and with `src`
    a root that leads out of the checkout (tree_files refuses links only below the root)."""
    if src is not None:
        src.inside(root, "(folder)")
    try:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in tree_files(root, SKIP)}
    except ValueError as e:  # a link: tree_files names it
        raise Refused(str(e).split(":", 1)[0], "(file)", "is a symbolic link", "replace it with a copy of the file") from None


# ---------------------------------------------------------------- task.json, fixture, references

def task_fields(task_dir: Path, src: Source) -> tuple[str, str, tuple[str, ...]]:
    path = task_dir / "task.json"
    data = read_json(path, src)
    rel = src.rel(path)
    if data.get("task_id") != task_dir.name:
        raise Refused(rel, "task_id", f"is {data.get('task_id')!r} but the folder is '{task_dir.name}'",
                      "make task_id equal the folder name")
    if data.get("kind", "primary") == "control":
        raise Refused(rel, "kind", "is 'control': a control task has no governing fact to remember",
                      "nothing to import; memgrid's bare arm is its control")
    prompt = data.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise Refused(rel, "prompt", "is missing or empty", "write the instruction the agent receives")
    terms = data.get("fact_terms")
    if not isinstance(terms, list) or not terms or not all(isinstance(t, str) and len(t) >= 2 for t in terms):
        raise Refused(rel, "fact_terms", "is not a non-empty list of terms (2+ characters each)",
                      "list the words that reveal the governing fact")
    return data["task_id"], prompt.strip(), tuple(dict.fromkeys(terms))


def fixture_files(task_dir: Path, src: Source) -> dict[str, bytes]:
    """tree/ with dirty/ laid over it: amb commits tree/ and leaves dirty/ as uncommitted edits; memgrid
    fixtures carry no git history, so the working tree is what the agent gets."""
    if not (task_dir / "tree").is_dir():
        raise Refused(src.rel(task_dir), "tree/", "is missing", "add the fixture repository as tree/")
    files = files_under(task_dir / "tree", src)
    if (task_dir / "dirty").is_dir():
        files.update(files_under(task_dir / "dirty", src))
    return files


APPLY = r"""
import importlib.util, sys
from pathlib import Path
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[3])
spec = importlib.util.spec_from_file_location("amb_reference", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module.apply(Path(sys.argv[2]))
"""


def apply_reference(reference: Path, fixture: dict[str, bytes], src: Source) -> dict[str, bytes]:
    """The files amb's `apply(workdir)` writes over the fixture, as a memgrid overlay. It runs on this
    machine in a child process on a scratch copy: import only checkouts you trust."""
    with tempfile.TemporaryDirectory(prefix="memgrid-amb-") as tmp:
        work = Path(tmp) / "work"
        for rel, data in fixture.items():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_bytes(data)
        work.mkdir(exist_ok=True)
        try:
            done = subprocess.run([sys.executable, "-B", "-c", APPLY, str(reference), str(work), str(src.root)],
                                  cwd=work, capture_output=True, text=True, timeout=APPLY_SECONDS,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise Refused(src.rel(reference), "apply", f"did not return within {APPLY_SECONDS}s",
                          "make apply(workdir) finish") from None
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
            raise Refused(src.rel(reference), "apply", f"failed on the fixture ({last})",
                          "make apply(workdir) run on a plain copy of tree/ (no git repository)")
        after = files_under(work)
    deleted = sorted(set(fixture) - set(after))
    if deleted:
        raise Refused(src.rel(reference), "apply", f"deletes {', '.join(deleted[:3])}, which a memgrid reference "
                      "(files laid over the fixture) cannot express", "write the file's new content instead")
    return {rel: data for rel, data in after.items() if fixture.get(rel) != data}


def damaged_references(task_dir: Path) -> dict[str, Path]:
    """condition -> reference/damaged_<condition>.py; a second memo's `damaged_<c>__<memo>.py` is not mapped."""
    return {c: task_dir / "reference" / f"damaged_{c}.py" for c in ROLE_OF
            if (task_dir / "reference" / f"damaged_{c}.py").is_file()}


# ---------------------------------------------------------------- transcripts

def recorded_events(path: Path, src: Source) -> list[dict]:
    """An amb recorded session as memgrid events: an assistant event's tool_result becomes a `tool` event,
    tool_input (JSON text) an object, and `ts` is dropped (the corpus build dates every session)."""
    events = []
    for n, raw in enumerate(src.inside(path).read_text(encoding="utf-8-sig").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            event = json.loads(raw)
        except json.JSONDecodeError as e:
            raise Refused(src.rel(path), f"line {n}", f"is not JSON ({e.msg})", "repair the recorded session") from None
        role, content = event.get("role"), event.get("content", "")
        if role not in ("user", "assistant", "tool") or not isinstance(content, str):
            raise Refused(src.rel(path), f"line {n}", f"has role {role!r} or a non-text content",
                          "use role user/assistant/tool with text content")
        out = {"role": role, "content": content}
        if event.get("tool_name"):
            out["tool_name"] = event["tool_name"]
        if "tool_input" in event and role == "assistant":
            out["tool_input"] = _tool_input(event["tool_input"])
        events.append(out)
        if role == "assistant" and "tool_result" in event:
            events.append({"role": "tool", "tool_name": event.get("tool_name", "tool"),
                           "content": str(event["tool_result"])})
    if not events:
        raise Refused(src.rel(path), "(file)", "holds no events", "record the session again")
    return events


def _tool_input(value) -> dict:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return {"input": value}
    return value if isinstance(value, dict) else {"input": value}


def rendered_events(staging: Path, src: Source) -> list[dict]:
    """A session that was staged but never recorded, rendered from its staging: the prompt, one Read of each
    stage file (its text as the tool result), the followup. The recorded agent's own analysis is absent."""
    prompt = src.inside(src.inside(staging, "(folder)") / "prompt.txt")
    if not prompt.is_file():
        raise Refused(src.rel(staging), "prompt.txt", "is missing", "add the session's first user message")
    events = [{"role": "user", "content": prompt.read_text(encoding="utf-8").strip()}]
    stage = staging / "stage"
    for rel, data in (files_under(stage, src).items() if stage.is_dir() else ()):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = f"(binary file, {len(data)} bytes)"
        events.append({"role": "assistant", "content": "", "tool_name": "Read", "tool_input": {"file_path": rel}})
        events.append({"role": "tool", "tool_name": "Read", "content": text})
    followup = src.inside(staging / "followup.txt")
    if followup.is_file():
        events.append({"role": "user", "content": followup.read_text(encoding="utf-8").strip()})
    return events


def session_events(recorded: Path, staging: Path, render: bool, src: Source) -> tuple[list[dict], str]:
    if recorded.is_file():
        return recorded_events(recorded, src), "recorded"
    if not render:
        raise Refused(src.rel(recorded), "(file)", f"is missing: {src.rel(staging)} was staged but never recorded",
                      "record it in amb, or pass --render-unrecorded to render it from its staging")
    return rendered_events(staging, src), "rendered"


def jsonl(events: list[dict]) -> bytes:
    return "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in events).encode("utf-8")


# ---------------------------------------------------------------- plants

@dataclass(frozen=True)
class PlantMap:
    conditions: dict[str, tuple[str, ...]]  # amb condition -> plant names, as listed
    wrong_terms: dict[str, tuple[str, ...]]  # plant name -> wrong terms
    dates: dict[str, str]  # plant name -> session_date ("" when undated)


def plant_map(task_dir: Path, src: Source) -> PlantMap:
    path = task_dir / "plants.json"
    if not path.is_file():
        return PlantMap({}, {}, {})
    data = read_json(path, src)
    rel = src.rel(path)
    declared, conditions = data.get("plants", {}), data.get("conditions", {})
    if not isinstance(declared, dict) or not isinstance(conditions, dict):
        raise Refused(rel, "plants/conditions", "is not an object", "map names to objects as amb's harness/plants.py reads")
    terms, dates, out = {}, {}, {}
    for name, body in declared.items():
        wrong = body.get("wrong_terms") if isinstance(body, dict) else None
        if not isinstance(wrong, list) or not wrong:
            raise Refused(rel, f"plants.{name}.wrong_terms", "is missing or empty", "list the plant's wrong terms")
        terms[name] = tuple(str(t) for t in wrong)
        dates[name] = str(body.get("session_date", ""))
    for condition, body in conditions.items():
        if condition == "absent":
            continue
        if condition not in ROLE_OF or not isinstance(body, dict):
            raise Refused(rel, f"conditions.{condition}", "is not a condition amb defines",
                          "use absent, superseded, contradictory or adjacent")
        names = tuple(str(n) for n in body.get("plants", ()))
        unknown = [n for n in names if n not in declared]
        if unknown:
            raise Refused(rel, f"conditions.{condition}.plants", f"names undeclared plant '{unknown[0]}'",
                          "declare it under plants")
        if bool(body.get("include_real")) != (condition == "superseded"):
            raise Refused(rel, f"conditions.{condition}.include_real", "differs from amb's preregistered shape",
                          "superseded keeps the real session; contradictory and adjacent do not")
        if names:
            out[condition] = names
    return PlantMap(out, terms, dates)


# ---------------------------------------------------------------- oracle

# What runs artifact code other than through harness.checker_run.run_bounded: in the judge's process (which can
# read the expected values) or as the judge's user. A checker that uses one is imported marked unisolated, by name.
RUNS_CODE_MODULES = frozenset({"subprocess", "multiprocessing", "runpy", "importlib"})
RUNS_CODE_OS = re.compile(r"system|popen|exec\w*|spawn\w*|posix_spawn\w*")
RUNS_CODE_CALLS = frozenset({"exec", "eval", "compile", "__import__"})
RUN_BOUNDED_ONLY = "run artifact code through harness.checker_run.run_bounded, which memgrid runs as the artifact's user"


def runs_code(node: ast.AST) -> str | None:
    """The construct `node` is when it can run artifact code outside run_bounded, else None."""
    if isinstance(node, ast.Import):
        return next((f"import {a.name}" for a in node.names if a.name.split(".")[0] in RUNS_CODE_MODULES), None)
    if isinstance(node, ast.ImportFrom) and not node.level and node.module:
        if node.module.split(".")[0] in RUNS_CODE_MODULES:
            return f"from {node.module} import {node.names[0].name}"
        if node.module == "os":
            return next((f"from os import {a.name}" for a in node.names if RUNS_CODE_OS.fullmatch(a.name)), None)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id == "os" and RUNS_CODE_OS.fullmatch(node.attr):
            return f"os.{node.attr}"
    if isinstance(node, ast.Attribute) and node.attr in ("insert", "append") and isinstance(node.value, ast.Attribute):
        if node.value.attr == "path" and isinstance(node.value.value, ast.Name) and node.value.value.id == "sys":
            return f"sys.path.{node.attr}"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in RUNS_CODE_CALLS:
        return f"{node.func.id}()"
    return None


def module_imports(source: str, path: str) -> tuple[set[str], set[str], set[str], list[tuple[int, str]]]:
    """(top-level modules imported, harness modules imported, names called, (line, construct) of each use
    of something that runs code outside run_bounded, in order) of one Python file."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise Refused(path, f"line {e.lineno}", f"is not valid Python ({e.msg})", "fix the syntax") from None
    tops, harness, calls, runs = set(), set(), set(), []
    for node in ast.walk(tree):
        construct = runs_code(node)
        if construct:
            runs.append((node.lineno, construct))
        if isinstance(node, ast.Import):
            for a in node.names:
                tops.add(a.name.split(".")[0])
                if a.name.startswith("harness."):
                    harness.add(a.name.split(".")[1])
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: a sibling harness module
                harness.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
            elif node.module:
                tops.add(node.module.split(".")[0])
                parts = node.module.split(".")
                if parts[0] == "harness":
                    harness.update([parts[1]] if len(parts) > 1 else [a.name for a in node.names])
        elif isinstance(node, ast.Call):
            f = node.func
            calls.add(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "")
        elif isinstance(node, ast.Constant) and node.value in ("git", "bash"):
            calls.add(node.value)
    return tops, harness, calls, sorted(runs)


def oracle_code(task_dir: Path, src: Source, local: set[str]) -> tuple[dict[str, bytes], list[str], str | None]:
    """checker.py, damage.py and the harness modules they import (transitively), as files under oracle/amb/,
    and why the checker is not isolated (None when it is). Refused when one needs something the checker image
    lacks: a third-party module, git or bash. `local`: the top-level modules of the fixture and the oracle,
    which a checker may import from the artifact."""
    out: dict[str, bytes] = {}
    unisolated: list[tuple[str, int, str]] = []  # (file under oracle/amb/, line, construct)
    pending = [("checker.py", task_dir / "checker.py")]
    if (task_dir / "damage.py").is_file():
        pending.append(("damage.py", task_dir / "damage.py"))
    vendored = []
    while pending:
        dest, path = pending.pop()
        if dest in out:
            continue
        if not src.inside(path).is_file():
            raise Refused(src.rel(path), "(file)", "is missing", "add it to the amb checkout")
        data = path.read_bytes()
        out[dest] = data
        tops, harness, calls, runs = module_imports(data.decode("utf-8", errors="replace"), src.rel(path))
        foreign = sorted(t for t in tops if t not in sys.stdlib_module_names | local | {"harness", "__future__"})
        if foreign:
            raise Refused(src.rel(path), "import", f"needs '{foreign[0]}', which memgrid's checker image does not have",
                          "use the standard library, or add the module to images/checker")
        if dest in ("checker.py", "damage.py") and calls & NEEDS_GIT_OR_BASH:
            needed = sorted(calls & NEEDS_GIT_OR_BASH)[0]
            raise Refused(src.rel(path), needed, "needs git or bash: amb fixtures are git repositories, memgrid "
                          "fixtures are plain files graded in an image without git or bash",
                          "grade the working tree's files instead")
        if dest != "harness/checker_run.py":  # amb's chokepoint itself: memgrid writes its own instead
            unisolated += [(dest, line, construct) for line, construct in runs]
        for name in sorted(harness):
            pending.append((f"harness/{name}.py", src.root / "harness" / f"{name}.py"))
            vendored.append(f"harness/{name}.py")
    if any(d.startswith("harness/") for d in out):
        out["harness/__init__.py"] = b""  # amb's own package __init__ imports the whole harness
    return out, sorted(set(vendored)), unisolated_why(sorted(unisolated))


def unisolated_why(uses: list[tuple[str, int, str]]) -> str | None:
    """The first use, by file and line, that keeps a checker from being isolated, and how many more there are."""
    if not uses:
        return None
    dest, line, construct = uses[0]
    more = f" (and {len(uses) - 1} more such use{'s' if len(uses) > 2 else ''})" if len(uses) > 1 else ""
    return (f"oracle/amb/{dest} line {line}: {construct} can run artifact code in the judge's process or as the "
            f"judge's user, who can read the expected values{more}")


def top_modules(files: dict[str, bytes]) -> set[str]:
    """The importable top-level names a file tree offers: foo.py and package folders."""
    return {rel.split("/")[0].removesuffix(".py") for rel in files if rel.endswith(".py")}


def uses_oracle_dir(source: bytes) -> bool:
    """Whether a checker reads its oracle_dir beyond naming it as a parameter."""
    return len(re.findall(rb"\boracle_dir\b", source)) > 1


CHILD = '''"""Runs an imported agent-memory-bench entry point in this child process: python3 -B amb_child.py
check ARTIFACT | detect ARTIFACT CONDITIONS_JSON

amb calls check(workdir, oracle_dir) and detect(workdir, oracle_dir, condition) on a writable sandbox;
each call here gets a fresh writable copy of the read-only artifact, in this judge's private TMPDIR. This
process is the judge's and never runs artifact code: amb's code runs it only through run_bounded, which
memgrid's harness/checker_run.py runs as the artifact user (unless task.yaml says checker.unisolated).
The report is one JSON line on a private copy of stdout, written only after the call returned; no report
is judged a failure.
"""
import sys

sys.dont_write_bytecode = True

import importlib.util
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

AMB = Path(__file__).resolve().parent / "amb"
ORACLE = AMB / "oracle"


def writable_copy(artifact: str) -> Path:
    work = Path(tempfile.mkdtemp(prefix="amb-")) / "work"
    shutil.copytree(artifact, work, symlinks=True)
    for path in [work, *work.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return work


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"amb_{name}", AMB / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what amb's code and the artifact print goes to stderr, never into the report
    sys.path.insert(0, str(AMB))
    mode, artifact = sys.argv[1], sys.argv[2]
    if mode == "check":
        check = load("checker").check
        try:
            ok, verdict = check(writable_copy(artifact), ORACLE)
            result = {"ok": bool(ok), "verdict": str(verdict)}
        except Exception as exc:  # amb grades a checker that raises as a failed task
            result = {"ok": False, "verdict": f"checker raised: {type(exc).__name__}: {exc}"}
    else:
        detect = load("damage").detect
        result = {"fired": [], "why": {}}
        for condition in json.loads(sys.argv[3]):
            try:
                hit, reason = detect(writable_copy(artifact), ORACLE, condition)
            except Exception as exc:
                hit, reason = False, f"detector raised: {type(exc).__name__}: {exc}"
            result["why"][condition] = str(reason)[:500]
            if hit:
                result["fired"].append(condition)
    report.write(json.dumps(result) + "\\n")
    report.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
'''

CHECK = '''"""memgrid checker for an imported agent-memory-bench task: python3 /oracle/check.py /artifact

Calls amb's checker.py (oracle/amb/, unchanged) in a child process; exit 0 only on its complete report
of a pass. Prints amb's verdict and a summary line. The child inherits memgrid_check's runner channel:
amb's run_bounded (memgrid's harness/checker_run.py) runs the artifact through it, as the artifact user.
"""
import sys

sys.dont_write_bytecode = True

import json
import os
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNNER = [int(os.environ["MEMGRID_RUNNER_FD"])] if "MEMGRID_RUNNER_FD" in os.environ else []


def main() -> int:
    with tempfile.TemporaryFile() as err:
        done = subprocess.run([sys.executable, "-B", str(HERE / "amb_child.py"), "check", sys.argv[1]],
                              stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True, pass_fds=RUNNER)
        err.seek(0)
        tail = err.read().decode(errors="replace").strip().splitlines()[-3:]
    try:
        report = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        print(f"SUMMARY: 0/1 amb checker gave no complete report (exit {done.returncode}): {' | '.join(tail)}")
        return 1
    # one line, last: memgrid shows a checker's last line as the verdict's detail
    print(f"SUMMARY: {int(report['ok'] is True)}/1 amb checker: " + " ".join(report["verdict"].split())[:300])
    return 0 if report["ok"] is True else 1


if __name__ == "__main__":
    sys.exit(main())
'''

DETECT = '''"""memgrid damage detector for an imported agent-memory-bench task: python3 /oracle/detect.py /artifact

Asks amb's damage.py detect() (oracle/amb/, unchanged) about each condition this task imported, in a
child process (with memgrid_check's runner channel, as check.py), and prints one JSON line:
{"fired": [...]}. Exits 0; no report names nothing.
"""
import sys

sys.dont_write_bytecode = True

import json
import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNNER = [int(os.environ["MEMGRID_RUNNER_FD"])] if "MEMGRID_RUNNER_FD" in os.environ else []
CONDITIONS = json.loads((HERE / "amb_conditions.json").read_text())


def main() -> None:
    fired = []
    if CONDITIONS:
        done = subprocess.run([sys.executable, "-B", str(HERE / "amb_child.py"), "detect", sys.argv[1],
                               json.dumps(CONDITIONS)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL, text=True, pass_fds=RUNNER)
        try:
            fired = [c for c in json.loads(done.stdout.strip().splitlines()[-1])["fired"] if c in CONDITIONS]
        except (IndexError, ValueError, KeyError, TypeError):
            fired = []
    print(json.dumps({"fired": fired}))


if __name__ == "__main__":
    main()
'''


CHECKER_RUN = r'''"""memgrid's harness/checker_run.py: it replaces agent-memory-bench's module of that name in a task
`memgrid task import` made (oracle/amb/harness/), with the same public names.

amb's checkers run the artifact only through `run_bounded(command, *, cwd, timeout_s, env)`, and amb runs
that command as the checker's own user. Here the checker is memgrid's judge, which can read /oracle, so
this `run_bounded` runs the command as the artifact user through memgrid_check.run_artifact, and the
judge never runs artifact code itself (a checker that runs it another way is marked checker.unisolated
by memgrid's importer, and no grid grades it without naming it under unisolated_checkers):

- `cwd`, the folder the checker staged in its private TMPDIR (the artifact user cannot read it), travels
  as a tar on stdin to BOOTSTRAP, which unpacks it into a folder of its own, puts that folder's path
  wherever the command names `cwd`, runs the command there within `timeout_s` and reports returncode,
  stdout, stderr and the files the command changed or made, as one JSON line on its own copy of stdout;
- those files are laid back into `cwd` (regular files at paths inside it only: the report is the
  artifact's to forge), so a checker that reads what the artifact wrote still works. A file the command
  deleted stays in `cwd`.
A run that outlives its timeout gives Completed(None, "", "timed out"), as amb's does; a run that gives
no report reads as a failed command. `git`, `git_bash` and `run_bash` raise: the checker image has
neither (the importer refuses a checker that calls them).
"""
from __future__ import annotations

import base64
import io
import json
import os
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

import memgrid_check

DEFAULT_TIMEOUT_S = 120.0
SLACK_S = 30.0  # packing, unpacking and reporting, beyond the command's own bound


@dataclass(frozen=True)
class Completed:
    returncode: int | None
    stdout: str
    stderr: str
    wall_s: float = 0.0
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


# Runs as the artifact user: python3 -I -B -c BOOTSTRAP JUDGE_CWD TIMEOUT ENV_JSON COMMAND..., the tar on stdin.
BOOTSTRAP = r"""
import base64, hashlib, io, json, os, subprocess, sys, tarfile, time
report = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
theirs, timeout, env, command = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4:]
ours = os.path.join(os.getcwd(), os.path.basename(theirs.rstrip("/")) or "work")
with tarfile.open(fileobj=io.BytesIO(sys.stdin.buffer.read()), mode="r:") as tar:
    tar.extractall(ours)
def files():
    out = {}
    for top, _, names in os.walk(ours):
        for name in names:
            path = os.path.join(top, name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as fh:
                    out[os.path.relpath(path, ours)] = hashlib.sha256(fh.read()).digest()
    return out
def emit(rec):
    report.write(json.dumps(rec) + "\n")
    report.flush()
    os._exit(0)
def text(data):
    return data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
before = files()
started = time.monotonic()
try:
    proc = subprocess.Popen([a.replace(theirs, ours) for a in command], cwd=ours, env={**os.environ, **env},
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
except OSError as e:
    emit({"returncode": 127, "stdout": "", "stderr": str(e), "seconds": 0.0, "files": ""})
try:
    out, err = proc.communicate(timeout=timeout)
except subprocess.TimeoutExpired:
    emit({"timed_out": True})  # memgrid-grade kills what is left
seconds = time.monotonic() - started
changed = io.BytesIO()
with tarfile.open(fileobj=changed, mode="w") as tar:
    for rel, digest in files().items():
        if before.get(rel) != digest:
            tar.add(os.path.join(ours, rel), arcname=rel)
emit({"returncode": proc.returncode, "stdout": text(out), "stderr": text(err), "seconds": seconds,
      "files": base64.b64encode(changed.getvalue()).decode()})
"""


def run_bounded(command, *, cwd: Path, timeout_s: float = DEFAULT_TIMEOUT_S, env=None) -> Completed:
    """Run `command` in a copy of `cwd` as the artifact user, bounded by `timeout_s`."""
    cwd = os.path.abspath(cwd)
    staged = io.BytesIO()
    with tarfile.open(fileobj=staged, mode="w") as tar:
        tar.add(cwd, arcname=".")  # links are packed as links, never followed
    argv = [*memgrid_check.PYTHON, "-c", BOOTSTRAP, cwd, str(timeout_s), json.dumps(dict(env or {})),
            *(str(a) for a in command)]
    run = memgrid_check.run_artifact(argv, stdin=staged.getvalue(), timeout=timeout_s + SLACK_S)
    if run.timed_out:
        return Completed(None, "", "timed out", timeout_s, True)
    try:
        rec = json.loads(run.stdout.decode().strip().splitlines()[-1])
        if rec.get("timed_out") is True:
            return Completed(None, "", "timed out", timeout_s, True)
        done = Completed(rec["returncode"], rec["stdout"], rec["stderr"], float(rec["seconds"]))
        if not (type(done.returncode) is int and isinstance(done.stdout, str) and isinstance(done.stderr, str)):
            raise TypeError("a field of the wrong type")
        lay_back(cwd, base64.b64decode(rec["files"], validate=True))
    except (ValueError, IndexError, KeyError, TypeError, AttributeError, tarfile.TarError) as e:
        return Completed(1, "", f"memgrid: the artifact run gave no usable report ({type(e).__name__}; exit "
                                f"{run.exit}): {run.tail()}", run.seconds)
    return done


def lay_back(cwd: str, data: bytes) -> None:
    """The files the run changed or made, into `cwd`: regular files only, at paths inside it, never through a link."""
    if not data:
        return
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
        for member in tar:
            parts = [p for p in member.name.split("/") if p not in ("", ".")]
            if not member.isreg() or not parts or ".." in parts:
                continue
            folder = cwd
            for part in parts[:-1]:
                folder = os.path.join(folder, part)
                if not os.path.lexists(folder):
                    os.mkdir(folder)
                if os.path.islink(folder) or not os.path.isdir(folder):
                    break
            else:
                target = os.path.join(folder, parts[-1])
                if os.path.islink(target):
                    os.unlink(target)
                if os.path.isdir(target):
                    continue
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(tar.extractfile(member).read())


def run_python(script, *args: str, cwd: Path, timeout_s: float = DEFAULT_TIMEOUT_S) -> Completed:
    """A Python artifact under the judge's interpreter, as amb's run_python; through run_bounded."""
    return run_bounded([sys.executable, str(script), *args], cwd=cwd, timeout_s=timeout_s)


def git_bash():
    raise RuntimeError("memgrid's checker image has no bash or git: grade the working tree's files instead")


def run_bash(*args, **kwargs):
    git_bash()


def git(*args, **kwargs):
    git_bash()
'''

# The vendored files memgrid writes in place of amb's.
REPLACED = {"harness/checker_run.py": CHECKER_RUN.encode()}


# ---------------------------------------------------------------- claude_md and placebo

def claude_md(amb_id: str, fixture: dict[str, bytes]) -> str:
    """amb's own claude_md baseline: two generic rules and the fixture's README (adapters/claude_md)."""
    # a byte-order mark is the README file's encoding, not text to carry into the middle of CLAUDE.md
    readme = fixture.get("README.md", b"").decode("utf-8", errors="replace").lstrip("\ufeff").strip()
    lines = [f"# CLAUDE.md — {amb_id}", "", *(f"- {r}" for r in CLAUDE_MD_RULES)]
    return "\n".join(lines + (["", readme] if readme else [])) + "\n"


def placebo(project: Path, task_id: str, text: str) -> str:
    """The placebo arm's file, made by arms/placebo/generate.py's own function for this one task."""
    path = project / "arms" / "placebo" / "generate.py"
    if not path.is_file():
        raise UserError(f"{path}: (file): does not exist — fix: run memgrid task import from the project checkout")
    spec = importlib_util.spec_from_file_location("memgrid_placebo_generate", path)
    module = importlib_util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.placebo_for(task_id, text)


# ---------------------------------------------------------------- one task

def digest_files(files: dict[str, bytes]) -> str:
    """What digest.tree_digest computes for a tree, over files already read."""
    return sha256_json([[rel, sha256_bytes(files[rel])] for rel in sorted(files)])


@dataclass
class Corpus:
    """A task's transcripts as memgrid files, and what each condition plants."""
    files: dict[str, bytes] = field(default_factory=dict)  # corpus/<name>.jsonl -> content
    roles: dict[str, list[str]] = field(default_factory=lambda: {"fact": []})
    how: dict[str, str] = field(default_factory=dict)  # corpus file -> "recorded: <source>" | "rendered: <staging>"
    sources: dict[str, bytes] = field(default_factory=dict)  # the amb files read, for the provenance digest
    conditions: list[str] = field(default_factory=lambda: ["absent", "present"])
    wrong_rules: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, role: str, name: str, recorded: Path, staging: Path, render: bool, src: Source) -> None:
        events, kind = session_events(recorded, staging, render, src)
        origin = recorded if kind == "recorded" else staging
        self.files[name] = jsonl(events)
        self.roles.setdefault(role, []).append(name)
        self.how[name] = f"{kind}: {src.rel(origin)}"
        if kind == "recorded":
            self.sources[src.rel(recorded)] = recorded.read_bytes()
        else:
            self.sources.update({f"{src.rel(staging)}/{rel}": data for rel, data in files_under(staging, src).items()})


def fact_sessions(task_dir: Path, amb_id: str, src: Source, render: bool, corpus: Corpus) -> str:
    """One fact transcript per precursor, in precursor order (p01, p02, ...); returns the fact summary: the
    precursors' followups, where the user states the decision."""
    staged = task_dir / "precursors"
    precursors = sorted(p for p in staged.glob("p*") if p.is_dir()) if staged.is_dir() else []
    if not precursors:
        raise Refused(src.rel(task_dir), "precursors/", "holds no session: the governing fact lives nowhere",
                      "stage the session(s) in which the fact arises as precursors/pNN/")
    for p in precursors:
        corpus.add("fact", f"corpus/fact_{p.name}.jsonl", src.root / "corpus" / "sessions" / amb_id / f"{p.name}.jsonl",
                   p, render, src)
    followups = [src.inside(p / "followup.txt").read_text(encoding="utf-8") for p in precursors
                 if (p / "followup.txt").is_file()]
    return " ".join(" ".join(followups).split())


def plant_sessions(task_dir: Path, amb_id: str, src: Source, render: bool, corpus: Corpus) -> None:
    """Each amb condition whose plants, detector and damaged reference are all there: its plants as the
    condition's role, its wrong terms as the role's markers."""
    plants = plant_map(task_dir, src)
    damaged = damaged_references(task_dir)
    has_detector = (task_dir / "damage.py").is_file()
    if (task_dir / "plants.json").is_file():
        corpus.sources[src.rel(task_dir / "plants.json")] = (task_dir / "plants.json").read_bytes()
    for condition in ("superseded", "contradictory", "adjacent"):
        names = plants.conditions.get(condition)
        if not names:
            continue
        if not has_detector or condition not in damaged:
            missing = "damage.py" if not has_detector else f"reference/damaged_{condition}.py"
            corpus.notes.append(f"{condition} not imported (no {missing})")
            continue
        markers = [t for n in names for t in plants.wrong_terms[n]]
        kept = list(dict.fromkeys(t for t in markers if len(t) >= MIN_MARKER))
        if not kept:
            raise Refused(src.rel(task_dir / "plants.json"), f"{condition} wrong_terms",
                          f"are all shorter than {MIN_MARKER} characters", "add a longer marker phrase")
        if len(kept) < len(markers):
            corpus.notes.append(f"{condition}: wrong terms under {MIN_MARKER} characters dropped as markers")
        # superseded: the stale plants are older than the fact, and memgrid dates a role's files in listed order
        ordered = sorted(names, key=lambda n: plants.dates.get(n, "")) if condition == "superseded" else names
        for n in ordered:
            corpus.add(ROLE_OF[condition], f"corpus/{n}.jsonl", src.root / "corpus" / "plants" / amb_id / f"{n}.jsonl",
                       task_dir / "plants" / n, render, src)
        corpus.wrong_rules[condition] = kept
        corpus.conditions.append(condition)
    rendered = sum(how.startswith("rendered") for how in corpus.how.values())
    if rendered:
        corpus.notes.append(f"{rendered} transcript(s) rendered from staging")


def reference_overlays(task_dir: Path, damage_conditions: list[str], fixture: dict[str, bytes],
                       src: Source) -> dict[str, dict[str, bytes]]:
    """references/<name> -> the files amb's apply(workdir) writes over the fixture."""
    refs = {}
    for name, stem in [("naive", "naive"), ("informed", "informed")] + \
            [(f"damaged/{c}", f"damaged_{c}") for c in damage_conditions]:
        path = src.inside(task_dir / "reference" / f"{stem}.py")  # it is run, not only read
        if not path.is_file():
            raise Refused(src.rel(path), "(file)", "is missing", f"add reference/{stem}.py with apply(workdir)")
        overlay = apply_reference(path, fixture, src)
        if not overlay:
            raise Refused(src.rel(path), "apply", "changes nothing in the fixture", "make it write the solution")
        refs[name] = overlay
    return refs


def spec_documents(task_id: str, amb_id: str, prompt: str, terms: tuple[str, ...], summary: str,
                   corpus: Corpus, unisolated: str | None) -> tuple[dict, dict]:
    """task.yaml and plants.yaml as data."""
    task = {
        "id": task_id,
        "title": f"{amb_id} (agent-memory-bench): " + " ".join(prompt.split())[:100],
        "prompt": prompt + "\n",
        "fact": {"summary": summary or f"The governing fact of amb task {amb_id} ({', '.join(terms)}).",
                 "terms": list(terms)},
        "conditions": corpus.conditions,
        "checker": {"command": ["python3", "/oracle/check.py", "/artifact"], "timeout_seconds": CHECKER_SECONDS,
                    **({"unisolated": unisolated} if unisolated else {})},
        "detector": {"command": ["python3", "/oracle/detect.py", "/artifact"], "timeout_seconds": CHECKER_SECONDS},
        **({"wrong_rules": corpus.wrong_rules} if corpus.wrong_rules else {}),
        "limits": {"agent_seconds": 600},
    }
    planted = {"superseded": ["stale", "fact"], "contradictory": ["rival"], "adjacent": ["adjacent"]}
    plants = {"roles": corpus.roles, "conditions": {"absent": [], "present": ["fact"],
                                                    **{c: planted[c] for c in corpus.conditions if c in planted}}}
    return task, plants


def decoded_text(data: bytes) -> str:
    """A transcript's text as written (runner/corpus/build.py session_text, over bytes not yet on disk)."""
    from runner.corpus.build import events_text  # the corpus builder, only when a source is read (the CLI starts fast)

    return events_text([json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()])


def term_mapping(prompt: str, terms: tuple[str, ...], corpus: Corpus) -> dict:
    """Every fact term and wrong-rule marker: as the source wrote it (JSON-escaped, so an escape such as \\r\\n or a
    byte-order mark is visible), what task.yaml holds, and which transcripts state it as written."""
    texts = {name: decoded_text(data).lower() for name, data in corpus.files.items()}

    def row(term: str, where: str) -> dict:
        return {"source": json.dumps(term), "task.yaml": f"{where}: {json.dumps(term)}",
                "in_transcripts": sorted(n for n, text in texts.items() if term.lower() in text),
                "in_prompt": term.lower() in prompt.lower()}

    return {"fact_terms": [row(t, "fact.terms") for t in terms],
            "wrong_terms": {c: [row(m, f"wrong_rules.{c}") for m in markers] for c, markers in corpus.wrong_rules.items()}}


def provenance(task_dir: Path, amb_id: str, src: Source, inputs: dict[str, bytes], corpus: Corpus,
               damage_conditions: list[str], vendored: list[str], prompt: str, terms: tuple[str, ...]) -> dict:
    stated = [t for t in terms if t.lower() in prompt.lower()]
    return {
        "format": "amb",
        "source": {**src.origin(SOURCE_REPOSITORY), "task": src.rel(task_dir), "inputs_sha256": digest_files(inputs)},
        "mapped": {
            "task.json prompt": "task.yaml prompt",
            "task.json fact_terms": "task.yaml fact.terms",
            "fact.summary": "the precursors' followup.txt (the user's stated decision), never shown to the agent",
            "tree/ + dirty/": "fixture/ (dirty/ laid over tree/; no git history)",
            "reference/<name>.py apply(workdir)": "references/<name>/: the files apply() writes over the fixture",
            "checker.py check(workdir, oracle_dir)": "oracle/check.py -> oracle/amb_child.py -> oracle/amb/checker.py",
            "damage.py detect(workdir, oracle_dir, condition)":
                f"oracle/detect.py asks it about {damage_conditions} -> {{\"fired\": [...]}}",
            f"oracles/{amb_id}/": "oracle/amb/oracle/ (oracle_dir)",
            "harness modules": vendored,
            **({"harness/checker_run.py": "replaced by memgrid's (same names): run_bounded runs the command as "
                                          "the artifact user through memgrid_check"} if REPLACED.keys() & {*vendored} else {}),
            "plants.json wrong_terms": "task.yaml wrong_rules, by condition",
            "conditions": {"present": "[fact]", "superseded": "[stale, fact] stale dated older (amb include_real)",
                           "contradictory": "[rival] both memos, no fact (amb's shape); memgrid dates them in listed "
                                            "order where amb permutes them per seed",
                           "adjacent": "[adjacent]"},
            "transcripts": corpus.how,
            "terms": term_mapping(prompt, terms, corpus),
            "claude_md": "two generic rules and tree/README.md, as amb's claude_md arm; placebo from "
                         "arms/placebo/generate.py",
        },
        "not_mapped": sorted(p.name for p in (task_dir / "reference").glob("*.py")
                             if p.stem not in {"naive", "informed", *(f"damaged_{c}" for c in damage_conditions)}),
        "notes": corpus.notes,
        # what the source is and the import keeps as it is; memgrid task check reports each (source_notes)
        "source_properties": {"prompt_states_terms": stated} if stated else {},
    }


def plan_task(task_dir: Path, src: Source, project: Path, into: Path, render: bool) -> Plan:
    """Everything one amb task becomes, decided and checked; nothing written."""
    src.inside(task_dir, "(folder)")
    amb_id, prompt, terms = task_fields(task_dir, src)
    task_id = memgrid_id(amb_id)
    target = into / task_id
    if target.exists():
        raise Refused(str(target), "(folder)", "already exists", "remove it to import the task again")
    elsewhere = suite_of_task(project, task_id)
    if elsewhere is not None:  # an arm's per-task files and the ledger know a task by its id alone
        raise Refused(str(elsewhere.tasks_dir / task_id), "(folder)", f"is task '{task_id}' of suite '{elsewhere.name}'",
                      "remove it there to import the task into this suite")
    fixture = fixture_files(task_dir, src)
    corpus = Corpus()
    summary = fact_sessions(task_dir, amb_id, src, render, corpus)
    plant_sessions(task_dir, amb_id, src, render, corpus)
    damage_conditions = [c for c in corpus.conditions if c in ROLE_OF]
    refs = reference_overlays(task_dir, damage_conditions, fixture, src)
    oracle_src = src.root / "oracles" / amb_id
    held_out = files_under(oracle_src, src) if oracle_src.is_dir() else {}
    code, vendored, unisolated = oracle_code(task_dir, src, top_modules(fixture) | top_modules(held_out))
    if not held_out and any(uses_oracle_dir(code[f]) for f in ("checker.py", "damage.py") if f in code):
        raise Refused(src.rel(oracle_src), "(folder)", "is missing but the checker reads oracle_dir",
                      "add the held-out checker inputs to oracles/<id>/")
    task_yaml, plants_yaml = spec_documents(task_id, amb_id, prompt, terms, summary, corpus, unisolated)
    for data, schema, name in ((task_yaml, "task", "task.yaml"), (plants_yaml, "plants", "plants.yaml")):
        try:
            validate(data, schema, target / name)
        except SpecError as e:
            raise Refused(str(e.path), e.field, e.problem, "fix the amb source field it came from") from None

    base = f"{into.relative_to(project).as_posix() if into.is_relative_to(project) else into}/{task_id}"
    files = {f"{base}/fixture/{rel}": data for rel, data in fixture.items()}
    for name, overlay in refs.items():
        files.update({f"{base}/references/{name}/{rel}": data for rel, data in overlay.items()})
    files.update({f"{base}/{rel}": data for rel, data in corpus.files.items()})
    files.update({f"{base}/oracle/amb/{rel}": REPLACED.get(rel, data) for rel, data in code.items()})
    files.update({f"{base}/oracle/amb/oracle/{rel}": data for rel, data in held_out.items()})
    files[f"{base}/oracle/amb_child.py"] = CHILD.encode()
    files[f"{base}/oracle/check.py"] = CHECK.encode()
    files[f"{base}/oracle/detect.py"] = DETECT.encode()
    files[f"{base}/oracle/amb_conditions.json"] = (json.dumps(damage_conditions) + "\n").encode()
    files[f"{base}/task.yaml"] = yaml.safe_dump(task_yaml, sort_keys=False, allow_unicode=True, width=100).encode()
    files[f"{base}/plants.yaml"] = yaml.safe_dump(plants_yaml, sort_keys=False).encode()
    instructions = claude_md(amb_id, fixture)
    files[f"arms/claude_md/tasks/{task_id}/CLAUDE.md"] = instructions.encode()
    files[f"arms/placebo/tasks/{task_id}/CLAUDE.md"] = placebo(project, task_id, instructions).encode()

    inputs = {src.rel(task_dir / "task.json"): (task_dir / "task.json").read_bytes(), **corpus.sources}
    inputs.update({f"{src.rel(task_dir)}/tree+dirty/{rel}": data for rel, data in fixture.items()})
    inputs.update({f"{src.rel(task_dir)}/reference/{p.name}": src.inside(p).read_bytes()
                   for p in sorted((task_dir / "reference").glob("*.py"))})
    inputs.update({f"oracle/{rel}": data for rel, data in {**code, **held_out}.items()})
    record = provenance(task_dir, amb_id, src, inputs, corpus, damage_conditions, vendored, prompt, terms)
    files[f"{base}/provenance.json"] = (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode()
    return Plan(task_dir, task_id, base, tuple(corpus.conditions), files, tuple(corpus.notes), unisolated)


def create_suite(project: Path, suite: str, src: Source) -> list[str]:
    """suite.yaml and the suite's corpus settings, when the suite is new: memgrid's own settings with a salt of its
    own. Returns the files written."""
    written = []
    folder = project / "tasks" / suite
    if not (folder / "suite.yaml").is_file():
        source = {"format": "amb", **src.origin(SOURCE_REPOSITORY)}
        doc = {"name": suite, "title": f"Tasks imported from {source['repository']} by memgrid task import --format amb",
               "source": source}
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "suite.yaml").write_text("# A task suite: its tasks are the folders beside this file; its corpus settings are in\n"
                                           f"# corpus/suites/{suite}/ (tasks/README.md, Suites).\n"
                                           + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100))
        written.append(f"tasks/{suite}/suite.yaml")
    corpus = project / "corpus" / "suites" / suite / "corpus.yaml"
    if not corpus.is_file():
        from runner.corpus.build import load_settings

        own = load_settings(project)
        settings = {"scale": own.scale, "seeds": list(own.seeds), "salt": f"{suite}-corpus-v1",
                    "start": own.start.isoformat(), "end": own.end.isoformat()}
        corpus.parent.mkdir(parents=True, exist_ok=True)
        corpus.write_text(f"# Suite {suite}'s corpus settings: as corpus/corpus.yaml, with a salt of its own. `memgrid corpus build\n"
                          f"# --suite {suite}` generates its corpora from its own tasks alone and writes digests.yaml here: commit it.\n"
                          + yaml.safe_dump(settings, sort_keys=False))
        written.append(f"corpus/suites/{suite}/corpus.yaml")
    return written


def import_tasks(path: Path, project: Path, suite: str, *, dry_run: bool = False, render: bool = False) -> ImportResult:
    """Import into suite `suite` (tasks/<suite>/), made when new."""
    into = suite_folder(project, suite)
    src, task_dirs = find_tasks(path)
    result = ImportResult()
    for task_dir in task_dirs:
        try:
            plan = plan_task(task_dir, src, project, into, render)
        except Refused as e:
            result.refusals.append(Refusal(task_dir, str(e)))
            continue
        result.plans.append(plan)
    if not dry_run and result.plans:
        result.created = create_suite(project, suite, src)
        for plan in result.plans:
            write(plan, project)
    return result


def write(plan: Plan, project: Path) -> None:
    """Write the task folder whole or not at all (a half-written task would load and then fail obscurely),
    staged beside tasks/ so no reader of tasks/ meets it half-made; then the arms' files."""
    task_root = project / plan.task_root
    staging = task_root.parent.parent / f".memgrid-import-{plan.task_id}"
    shutil.rmtree(staging, ignore_errors=True)
    prefix = plan.task_root + "/"
    try:
        for rel, data in plan.files.items():
            if rel.startswith(prefix):
                (staging / rel[len(prefix):]).parent.mkdir(parents=True, exist_ok=True)
                (staging / rel[len(prefix):]).write_bytes(data)
        staging.rename(task_root)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for rel, data in plan.files.items():
        if not rel.startswith(prefix):
            (project / rel).parent.mkdir(parents=True, exist_ok=True)
            (project / rel).write_bytes(data)


class AmbFormat(SourceFormat):
    name = "amb"
    protocol = "coding"
    about = "an agent-memory-bench task folder (tasks/<id>/) or its tasks/ folder"
    options = {"render": "render a staged but unrecorded session from its prompt, stage files and followup instead of "
                         "refusing the task."}

    def import_source(self, path: Path, project: Path, suite: str, *, dry_run: bool = False,
                      render: bool = False) -> ImportResult:
        return import_tasks(path, project, suite, dry_run=dry_run, render=render)

    def closing_lines(self, result: ImportResult, suite: str, dry_run: bool) -> list[str]:
        if not result.plans:
            return []
        # so every shipped arm runs on the suite; each task's provenance.json says how they were made
        lines = [f"{'would write' if dry_run else 'wrote'} each task's arm files: arms/claude_md/tasks/<id>/CLAUDE.md "
                 f"(the source's claude_md baseline) and arms/placebo/tasks/<id>/CLAUDE.md (arms/placebo/generate.py)"]
        if not dry_run:
            lines.append(f"next: memgrid corpus build --suite {suite}, commit corpus/suites/{suite}/digests.yaml, "
                         f"then memgrid task check --suite {suite}")
        return lines
