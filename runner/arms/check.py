"""`memgrid arm add` and `memgrid arm check`: scaffold an arm a vendor fills in; preflight an arm
without a model.

add copies runner/scaffold/<kind>/ to arms/NAME/ with the names filled in. check runs, timed, one
line each: the spec (arm.yaml against its schema, then what the schema cannot see); the arm's
image (built when missing); for an mcp arm, the ingest of a tiny generated corpus through
runner.arms.ingest.ingest, a sandbox of the arm's image holding that store in a bundle shaped like a
cell's, and memgrid-reader in it, whose events say whether the server connected, listed its
required tools and found the session the query names; for an arm with mcp.write, memgrid-reader's
two-session modes in the same sandbox then remember a unique line through the write tool and search
for it again. Each problem is one line naming the file, the field and the fix. Every container
carries the run label armcheck-<uuid> and is removed by it.
"""

import json
import re
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Callable

import docker.errors

from runner.arms.kinds import kind_of
from runner.env.archive import Entry, pack
from runner.env.bundle import AGENT_UID, Bundle, build_bundle
from runner.corpus.build import MANIFEST
from runner.digest import sha256_bytes
from runner.errors import EngineError, SpecError, UserError
from runner.plan.grid import CellSpec
from runner.env.embedder import EMBEDDER_URL
from runner.env.images import IMAGES_DIR, ImageRef, arm_image_needed, ensure_arm_image, ensure_derived, ensure_images
from runner.arms.ingest import StoreSnapshot, fill, ingest
from runner.arms.registry import from_npm, from_pypi
from runner.env.sandbox import Sandbox, probe, remove_run_containers
from runner.plan.spec import ArmSpec, CheckerSpec, TaskSpec, image_arm, load_all_arms, load_arm
from runner.protocols.registry import PROTOCOLS
from runner.exec.trial import STORE_DIR, TrialContext, agent_config

ARM_NAME = re.compile(r"^[a-z][a-z0-9_]{1,47}$")  # runner/schemas/arm.schema.json: name
SCAFFOLD_KINDS = ("mcp", "files", "none", "memora-submission")
PACKAGE_DIR = "ARM_PACKAGE"  # the scaffold's package folder, renamed to the arm's name
READER_SECONDS = 180
CONDITION, SEED = "present", 0
CONTRACT_PERSON = ("p00", "weekly")  # a submission's check: a generated person, 23 records and 5 questions

# The tiny corpus: (ask, command, command output, finding, decision) per session; QUERY names TARGET only.
SESSIONS = [
    ("CI is slow, the wheel cache never hits.", "grep -n key .github/workflows/ci.yml",
     "14:          key: pip-${{ github.sha }}", "The cache key includes the commit sha, so it changes every run.",
     "Key the pip cache on the hash of requirements.lock instead."),
    ("test_expiry fails on Monday mornings.", "pytest -q -k expiry",
     "FAILED tests/test_tokens.py::test_expiry - AssertionError", "It calls datetime.now() twice across a second boundary.",
     "Freeze the clock with the frozen_clock fixture in conftest.py."),
    ("Worker logs are unreadable in the aggregator.", "tail -n 2 worker.log",
     "Traceback (most recent call last):", "Tracebacks span many lines and carry no request id.",
     "Emit one JSON object per line with a request_id field."),
    ("The nightly invoice export times out for our biggest accounts.", "grep -n 'def export' billing/export.py",
     "billing/export.py:40:def export_invoices(account):",
     "It loads every invoice of an account into memory before it writes the CSV.",
     "Stream the invoice export in batches of 500 rows into a gzip CSV; the nightly export no longer times out."),
    ("The orders migration locks the table for minutes.", "grep -n add_column migrations/0042_orders.py",
     "12:    op.add_column('orders', sa.Column('channel', server_default='web'))",
     "It adds a column with a default to a table of forty million rows.", "Add the column nullable and backfill it in batches."),
    ("The docs build fails on a fresh clone.", "make -C docs html",
     "Extension error: Could not import extension sphinx.ext.autosummary", "sphinx is unpinned and a new major dropped an extension.",
     "Pin sphinx below the next major version in docs/requirements.txt."),
]
TARGET = 3
QUERY = "Make the nightly invoice export stop timing out on large accounts."


# ---- arm add ------------------------------------------------------------------------------------

def _suggest(name: str) -> str:
    fixed = re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_")
    fixed = fixed if fixed[:1].isalpha() else f"arm_{fixed}"
    return fixed[:48] if ARM_NAME.fullmatch(fixed[:48]) else "my_memory"


def _shadowed_modules() -> set[str]:
    """Top-level modules an arm's package may not be named after: it goes first on the image's sys.path."""
    pydeps = IMAGES_DIR / "sandbox" / "pydeps"
    vendored = {p.name.split(".")[0] for p in pydeps.iterdir()} if pydeps.is_dir() else set()
    return set(sys.stdlib_module_names) | vendored | {"mcp", "pydantic", "anyio"}


def scaffold(root: Path, name: str, kind: str = "mcp", *, npm: str | None = None, pypi: str | None = None) -> list[Path]:
    """Write arms/NAME/ from the scaffold of `kind`, or around the published server `npm` (PKG@VER) or `pypi`
    (PKG==VER), pinned from its registry; returns the files written. Nothing is written unless all of it is."""
    if npm and pypi:
        raise UserError("--from-npm and --from-pypi: an arm wraps one package: fix: give one of them")
    if (npm or pypi) and kind != "mcp":
        raise UserError(f"--kind {kind}: a published server makes an mcp arm: fix: drop --kind")
    if kind not in SCAFFOLD_KINDS:
        raise UserError(f"--kind {kind}: is not a scaffold kind: fix: use one of {', '.join(SCAFFOLD_KINDS)}")
    if not ARM_NAME.fullmatch(name):
        raise UserError(f"arm name '{name}' is not valid: fix: use 2 to 48 lower-case letters, digits and underscores, "
                        f"starting with a letter (e.g. {_suggest(name)})")
    if kind == "mcp" and not (npm or pypi) and name in _shadowed_modules():
        raise UserError(f"arm name '{name}' would shadow Python's '{name}' module in the arm's image: fix: choose "
                        f"another name (e.g. {name}_memory)")
    arms_dir = root / "arms"
    if not arms_dir.is_dir():
        raise UserError(f"{arms_dir}: does not exist: fix: run memgrid from the project checkout, or set MEMGRID_ROOT to it")
    target = arms_dir / name
    if target.exists():
        raise UserError(f"arms/{name}: already exists: fix: choose another name, or remove arms/{name} first")
    published = from_npm(npm) if npm else from_pypi(pypi) if pypi else None  # the registry, after the cheap checks
    source = Path(str(resources.files("runner").joinpath("scaffold", kind if published is None else "registry")))
    files = {p.relative_to(source): p.read_text(encoding="utf-8") for p in sorted(source.rglob("*"))
             if p.is_file() and "__pycache__" not in p.parts}
    if kind == "files":  # one file per task, from the template
        template = files[Path("TEMPLATE.md")]
        from runner.plan.spec import load_suites

        for task_dir in sorted((d for s in load_suites(root).values() for d in s.task_dirs()), key=lambda d: d.name):
            files[Path("tasks", task_dir.name, "CLAUDE.md")] = template.replace("__TASK__", task_dir.name)
    values = {}
    if published is not None:
        files.update({Path(pin): text for pin, text in published.pins.items()})
        others = (f"#\n# The package's other commands: {', '.join(published.others)}; start one of them below instead "
                  "if it is the server.\n" if published.others else "")
        values = {**published.values, "__FLAG__": published.flag, "__REGISTRY__": published.registry,
                  "__PACKAGE__": published.package, "__VERSION__": published.version, "__COMMAND__": published.command,
                  "__OTHERS__": others}
    values |= {"__SERVER__": name[:32], "__ARM__": name}  # last: the values above may name the arm
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=arms_dir))
    written = []
    for rel, text in sorted(files.items()):
        rel = Path(*(name if part == PACKAGE_DIR else part for part in rel.parts))
        for placeholder, value in values.items():
            text = text.replace(placeholder, value)
        (staging / rel).parent.mkdir(parents=True, exist_ok=True)
        (staging / rel).write_text(text, encoding="utf-8")
        written.append(target / rel)
    staging.chmod(0o755)  # mkdtemp makes it 0700
    staging.rename(target)  # whole or not at all
    return written


# ---- arm check ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Problem:
    where: str  # file: field
    what: str
    fix: str

    def line(self) -> str:
        return f"PROBLEM {self.where}: {self.what}: fix: {self.fix}"


@dataclass
class Report:
    arm: str
    steps: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _split_fix(message: str) -> tuple[str, str]:
    what, _, fix = str(message).partition(": fix: ")
    return what, fix or "see the message"


def _tail(text: str, lines: int = 2) -> str:
    return " | ".join([l.strip() for l in text.splitlines() if l.strip()][-lines:])[-300:]


def write_tiny_corpus(folder: Path) -> tuple[Path, str]:
    """Six sessions in the corpus format (docs/<name>.jsonl + MANIFEST.sha256); returns (folder, TARGET's name)."""
    docs = folder / "docs"
    docs.mkdir(parents=True)
    manifest, names = [], []
    for i, (ask, command, output, finding, decision) in enumerate(SESSIONS):
        name = sha256_bytes(f"armcheck:{i}".encode())[:20]
        events = [{"role": "user", "content": ask},
                  {"role": "assistant", "content": "Let me look first.", "tool_name": "Bash", "tool_input": {"command": command}},
                  {"role": "tool", "tool_name": "Bash", "content": output},
                  {"role": "assistant", "content": finding},
                  {"role": "user", "content": "Makes sense. What do we do about it?"},
                  {"role": "assistant", "content": decision},
                  {"role": "user", "content": "ok, go ahead"},
                  {"role": "assistant", "content": "Done, and the tests pass."}]
        data = "".join(json.dumps({"session": name, "ts": f"2024-0{i + 1}-1{i}T09:{10 + j:02d}:00Z", **e}, sort_keys=True) + "\n"
                       for j, e in enumerate(events)).encode()
        (docs / f"{name}.jsonl").write_bytes(data)
        manifest.append(f"{sha256_bytes(data)}  docs/{name}.jsonl\n")
        names.append(name)
    (folder / MANIFEST).write_text("".join(sorted(manifest, key=lambda l: l.split("  ", 1)[1])))
    return folder, names[TARGET]


class ArmCheck:
    def __init__(self, root: Path, name: str, emit: Callable[[str], None], log: Callable[[str], None]):
        self.root, self.name, self.emit, self.log = root, name, emit, log
        self.yaml = f"arms/{name}/arm.yaml"
        self.report = Report(name)
        self.embedder: str | None = None  # the shared embedder's image tag, for an arm with embedder: shared
        self.images = None  # env.images.ImageSet, once the image step has them

    def step(self, name: str, started: float, ok: bool, detail: str) -> None:
        line = f"{'ok' if ok else 'FAIL':<4} {name:<8} {time.monotonic() - started:6.2f}s  {detail}"
        self.report.steps.append(line)
        self.emit(line)

    def sub(self, name: str, ok: bool, detail: str) -> None:
        """A result read from the step above (no time of its own)."""
        line = f"  {'ok' if ok else 'FAIL':<4} {name:<6} {detail}"
        self.report.steps.append(line)
        self.emit(line)

    def problem(self, where: str, what: str, fix: str) -> None:
        p = Problem(where, what, fix)
        self.report.problems.append(p)
        self.emit(p.line())

    def rel(self, path) -> str:
        try:
            return Path(path).resolve().relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    # -- steps --

    def spec(self) -> ArmSpec | None:
        t0 = time.monotonic()
        arm_dir = self.root / "arms" / self.name
        if not (arm_dir / "arm.yaml").is_file():
            known = sorted(p.parent.name for p in (self.root / "arms").glob("*/arm.yaml"))
            self.step("spec", t0, False, f"{self.yaml} not found")
            self.problem(self.yaml, "does not exist", f"run 'memgrid arm add {self.name}', or check the name "
                                                      f"(arms: {', '.join(known) or 'none'})")
            return None
        try:
            arm = load_arm(arm_dir)
        except SpecError as e:
            self.step("spec", t0, False, f"{self.yaml} does not validate")
            self.problem(f"{self.rel(e.path)}: {e.field}", e.problem, e.fix)
            return None
        problems = self.spec_problems(arm)
        detail = f"{self.yaml}: kind {arm.kind}"
        if arm.mcp is not None:
            detail += f", server {arm.mcp.server}, required tools {', '.join(arm.mcp.required_tools)}"
        elif arm.files:
            detail += f", {len(arm.files)} file{'s' * (len(arm.files) != 1)} per task"
        self.step("spec", t0, not problems, detail)
        for p in problems:
            self.problem(*p)
        return None if problems else arm

    def spec_problems(self, arm: ArmSpec) -> list[tuple[str, str, str]]:
        """What the schema cannot see: names that must agree, placeholders, the image, the files per task."""
        found, y = [], self.yaml
        dockerfile = arm.root / "Dockerfile"
        if arm.mcp is not None:
            expected = f"{arm.mcp.prefix}{arm.mcp.search_tool}"
            if arm.search_tool != expected:
                found.append((f"{y}: search_tool", f"is '{arm.search_tool}' but the server's search tool is '{expected}'",
                              f"set search_tool: {expected}"))
            if arm.mcp.search_tool not in arm.mcp.required_tools:
                found.append((f"{y}: mcp.required_tools", f"does not list the search tool '{arm.mcp.search_tool}'",
                              f"add {arm.mcp.search_tool} to required_tools"))
            for other in sorted(self.root.glob("arms/*/arm.yaml")):
                if other.parent.name == arm.name:
                    continue
                try:
                    theirs = load_arm(other.parent)
                except SpecError:
                    continue
                if theirs.mcp is not None and theirs.mcp.server == arm.mcp.server:
                    found.append((f"{y}: mcp.server", f"'{arm.mcp.server}' is also the server of arms/{theirs.name}",
                                  "choose a server name no other arm uses"))
        if arm.ingest is not None:
            try:
                fill(arm.ingest, corpus="c", store="s", namespace="n")
            except (KeyError, IndexError, ValueError) as e:
                found.append((f"{y}: ingest.command", f"has a placeholder memgrid does not fill ({e})",
                              "use only {corpus}, {store} and {namespace}; write a literal brace as {{ or }}"))
            for slot in ("{corpus}", "{store}"):
                if not any(slot in part for part in arm.ingest):
                    found.append((f"{y}: ingest.command", f"never names {slot}", f"pass {slot} to the ingest command"))
        try:
            source = image_source(self.root, arm)
        except SpecError as e:
            return [*found, (f"{self.rel(e.path)}: {e.field}", e.problem, e.fix)]
        if (kind_of(arm).ingests or kind_of(arm).submission) and not arm_image_needed(source.root):
            found.append((f"arms/{arm.name}/Dockerfile", f"does not exist (a {arm.kind} arm runs in its own image)",
                          "add one (ARG BASE / FROM ${BASE}); 'memgrid arm add NAME' writes an example"))
        if arm_image_needed(arm.root) and not re.search(r"(?m)^\s*FROM\s+\$\{?BASE\}?\s*$", dockerfile.read_text(errors="replace")):
            found.append((f"arms/{arm.name}/Dockerfile", "FROM does not name the sandbox image",
                          "start it with 'ARG BASE' and 'FROM ${BASE}'"))
        tasks = sorted(p.parent for p in self.root.glob("tasks/*/task.yaml"))
        for i, f in enumerate(arm.files):
            missing = [t.name for t in tasks if not (arm.root / f.source.replace("{task}", t.name)).is_file()]
            if missing:
                found.append((f"{y}: files[{i}].source", f"{f.source} is missing for {len(missing)} tasks ({', '.join(missing[:4])}"
                              f"{', ...' if len(missing) > 4 else ''})", f"add arms/{arm.name}/{f.source} for each of them"))
            clashes = [t.name for t in tasks if (t / "fixture" / f.dest).exists()]
            if clashes:
                found.append((f"{y}: files[{i}].dest", f"{f.dest} would overwrite a fixture file of {', '.join(clashes[:4])}",
                              "choose another dest"))
        return found

    def image(self, client, arm: ArmSpec) -> ImageRef | None:
        t0, logs = time.monotonic(), []

        def log(message: str) -> None:
            logs.append(message)
            self.log(message)

        try:
            images = self.images = ensure_images(client, log=log)
            ref = ensure_arm_image(client, image_source(self.root, arm).root, images.sandbox, log=log)
            if arm.embedder == "shared":  # the sidecar its ingest and its session embed through
                self.embedder = ensure_derived(client, "embedder", images.base, log=log).tag
        except EngineError as e:
            self.step("image", t0, False, f"arms/{arm.name}/Dockerfile did not build")
            self.problem(f"arms/{arm.name}/Dockerfile", *_split_fix(e))
            return None
        built = any(m.startswith("building memgrid-arm-") for m in logs)
        self.step("image", t0, True, f"{ref.tag} ({'built' if built else 'cached'}, {ref.id[7:19]})")
        return ref

    def ingest(self, client, arm: ArmSpec, image: ImageRef, run_id: str) -> tuple[StoreSnapshot | None, str]:
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="memgrid-armcheck-") as tmp:
            corpus, target = write_tiny_corpus(Path(tmp))
            try:
                snapshot = ingest(client, image.tag, arm, corpus, CONDITION, SEED, run_id=run_id, embedder=self.embedder)
            except docker.errors.NotFound:
                self.step("ingest", t0, False, "no store")
                self.problem(f"{self.yaml}: ingest.command", "exited 0 but wrote nothing at {store}",
                             "write the store into the folder {store} names (it does not exist yet: create it)")
                return None, target
            except UserError as e:
                what = str(e).partition(": fix: ")[0].removeprefix(f"{self.yaml}: ").removeprefix("ingest: ")
                self.step("ingest", t0, False, "failed")
                self.problem(f"{self.yaml}: ingest.command", what, "make the ingest command exit 0 on a folder holding "
                             "docs/*.jsonl and MANIFEST.sha256, writing its store into {store} (its output is quoted)")
                return None, target
        r = snapshot.report
        self.step("ingest", t0, r["documents"] > 0, f"{r['documents']} of {r['corpus_documents']} sessions stored "
                  f"(namespace {r['namespace']}, {r['files']} files, {r['bytes']} bytes)")
        if r["documents"] == 0:
            said = "store.json says 0 documents" if any(e.path == "store.json" for e in snapshot.entries) else "it wrote no store.json"
            self.problem(f"{self.yaml}: ingest.command", f"store is empty: {said} after ingesting {r['corpus_documents']} sessions",
                         'write store.json with "documents": <sessions stored> into {store}; cells over an empty store are discarded')
        return snapshot, target

    def bundle(self, arm: ArmSpec, snapshot: StoreSnapshot, scratch: Path) -> Bundle:
        """A cell's bundle for a synthetic task: a one-file workspace, the query as prompt, the store."""
        fixture = scratch / "fixture"
        fixture.mkdir()
        (fixture / "README.md").write_text("# armcheck\n\nAn empty repository for memgrid's arm check.\n")
        task = TaskSpec(id="armcheck", title="arm check", prompt=QUERY, fact_summary="", fact_terms=(),
                        conditions=(CONDITION,), checker=CheckerSpec(("true",)), detector=CheckerSpec(("true",)),
                        agent_seconds=READER_SECONDS, wrong_rules={}, plants=None, root=scratch)
        memory = [Entry(f"store/{e.path}", e.data, e.mode) for e in snapshot.entries]
        return build_bundle(task, replace(arm, files=()), agent_config(_cell(arm), arm), memory)

    def session(self, client, arm: ArmSpec, image: ImageRef, snapshot: StoreSnapshot, target: str, run_id: str) -> None:
        t0 = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="memgrid-armcheck-") as tmp:
            bundle = self.bundle(arm, snapshot, Path(tmp))
        sessions = 3 if arm.mcp.write is not None else 1  # the search; then remember and recall
        sandbox = Sandbox(client, image.tag, run_id, f"armcheck-{arm.name}", bundle_tar=bundle.tar,
                          lifetime=sessions * READER_SECONDS + 120, embedder=self.embedder)
        try:
            sandbox.start()
            if sandbox.embedder_failure:
                self.step("session", t0, False, "the shared embedder sidecar did not get ready")
                self.problem(f"{self.yaml}: embedder", sandbox.embedder_failure, "run 'memgrid images build' and check images/embedder")
                return
            said = probe(lambda: sandbox.verification_report(timeout=60))[0].stdout.strip()  # read again if lost
            line = said.splitlines()[-1] if said else ""
            try:
                verified = json.loads(line)
            except json.JSONDecodeError:
                verified = {}
            if not (verified.get("ok") and verified.get("manifest_sha256") == bundle.digest):
                self.step("sandbox", t0, False, "bundle not verified")
                self.problem(f"arms/{arm.name}/Dockerfile", f"the bundle verifier in the arm's image reported {line[:200]!r}",
                             "build FROM ${BASE}, keep /usr/local/bin/memgrid-verify-bundle and write nothing under /sandbox")
                return
            self.step("sandbox", t0, True, f"bundle verified ({bundle.files} files, {len(snapshot.entries)} in store/)")
            t0 = time.monotonic()
            sandbox.put("/sandbox", pack([Entry(".reader/options.json", b"{}\n")], uid=AGENT_UID, gid=AGENT_UID))
            result = sandbox.exec(["memgrid-reader"], timeout=READER_SECONDS, workdir="/sandbox")
            self.read_results(arm, image, result, snapshot, target, t0)
            if arm.mcp.write is not None and self.report.ok:  # a write is checked only over a read path that works
                self.write_check(sandbox, arm)
        finally:
            sandbox.stop()

    def read_results(self, arm: ArmSpec, image: ImageRef, result, snapshot: StoreSnapshot, target: str, t0: float) -> None:
        events = _events(result.stdout)
        finished = next((e for e in events if e.get("type") == "result"), {})
        ok = result.exit_code == 0 and finished.get("is_error") is False
        self.step("reader", t0, ok, f"memgrid-reader exited {result.exit_code}, {len(events)} events"
                  + ("" if ok else f" ({finished.get('error') or _tail(result.stderr) or 'no result event'})"))
        if not ok:
            self.problem(f"arms/{arm.name}/Dockerfile", f"memgrid-reader failed in the arm's image "
                         f"({'timed out' if result.timed_out else finished.get('error') or _tail(result.stderr)})",
                         "build FROM ${BASE} and keep the sandbox image's /usr/local/bin and /opt/memgrid/pydeps")
        self.mcp_results(arm, image, events, result.stderr, snapshot, target)

    def mcp_results(self, arm: ArmSpec, image: ImageRef, events: list[dict], stderr: str, snapshot: StoreSnapshot,
                    target: str) -> None:
        """The gate's view of the reader's record: server connected, required tools listed, search found something."""
        mcp, y = arm.mcp, self.yaml
        command = " ".join(part.replace("{store}", STORE_DIR).replace("{embedder_url}", EMBEDDER_URL) for part in mcp.command)
        init = next((e for e in events if e.get("type") == "init"), {})
        status = next((s for s in init.get("mcp_servers", []) if s.get("name") == mcp.server), {"status": "absent"})
        if status.get("status") != "connected":
            error = status.get("error") or "no init event"
            self.sub("server", False, f"{mcp.server}: {status.get('status')}")
            self.problem(f"{y}: mcp.command", f"server '{mcp.server}' failed to start or answer ({error})"
                         + (f"; its stderr: {_tail(stderr)}" if _tail(stderr) else ""),
                         f"make '{command}' serve MCP over stdio in the arm's image, {STORE_DIR} holding the "
                         f"store its ingest wrote (try: docker run --rm -i {image.tag} {command})")
            return
        self.sub("server", True, f"{mcp.server}: connected")
        listed = init.get("tools", [])
        missing = [f"{mcp.prefix}{t}" for t in mcp.required_tools if f"{mcp.prefix}{t}" not in listed]
        self.sub("tools", not missing, f"listed {', '.join(listed) or 'nothing'}")
        if missing:
            self.problem(f"{y}: mcp.required_tools", f"the server did not list {', '.join(missing)}",
                         "register those tools in the server, or remove them from required_tools")
        tool = f"{mcp.prefix}{mcp.search_tool}"
        call = next((e for e in events if e.get("type") == "tool_call" and e.get("tool") == tool), None)
        ranked = next((e.get("ranked", []) for e in events if e.get("type") == "search" and e.get("tool") == tool), [])
        where = f"rank {ranked.index(target) + 1}" if target in ranked else "not among them"
        self.sub("search", bool(ranked), f"{len(ranked)} hits for {QUERY!r}; the session it names: {where}")
        if call is None or call.get("is_error"):
            self.problem(f"{y}: mcp.search_tool", f"calling {tool}(query, k) {'failed' if call else 'never happened'}",
                         "give the server a tool search(query: str, k: int) that answers without error")
        elif not ranked:
            self.problem(f"{y}: mcp.search_tool", f"{tool} returned no hits from a store of {snapshot.report['documents']} sessions",
                         'return {"hits": [{"id": ..., "snippet": ...}, ...]}, best first, as the tool\'s structured result')
        gets = [e for e in events if e.get("type") == "tool_call" and e.get("tool") == f"{mcp.prefix}get"]
        if gets:
            failed = sum(bool(e.get("is_error")) for e in gets)
            self.sub("get", not failed, f"{len(gets) - failed} of {len(gets)} hits read")
            if failed:
                self.problem(f"{y}: mcp.command", f"get(id) failed for {failed} of {len(gets)} ids that search returned",
                             'make get(id) accept every id search returns and answer {"text": ...}')
        for i, hook in enumerate(arm.hooks):
            fired = [e for e in events if e.get("type") == "hook" and e.get("event") == hook.event
                     and list(e.get("command", [])) == list(hook.command)]
            good = any(e.get("exit_code") == 0 and e.get("output_sha256") for e in fired)
            self.sub("hook", good, f"{hook.event}: {' '.join(hook.command)[:60]}")
            if not good:
                self.problem(f"{y}: hooks[{i}]", "did not run with exit 0 and output" if fired else "did not run",
                             "make the command exit 0 and print something in the arm's image")

    def write_check(self, sandbox: Sandbox, arm: ArmSpec) -> None:
        """memgrid-reader remembers a line no store holds through mcp.write (--remember: the write tool called and
        its id read as the two-session reader does), then, in a session of its own over the store that left,
        searches for the line's key as mcp.search says (--answer); a hit must carry the id or the line."""
        mcp, y = arm.mcp, self.yaml
        write, tool = mcp.write, f"{mcp.prefix}{mcp.write.tool}"
        token = uuid.uuid4().hex[:12]
        key, value = f"armcheck w{token} marker", f"v{token[::-1]}"
        text = f"{key} = {value}"
        config = agent_config(_cell(arm), arm, phase="armcheck")  # with "write", and the server as writers start it
        sandbox.put("/sandbox", pack([Entry("agent/config.json", json.dumps(config).encode()),
                                      Entry(".reader/remember.json", json.dumps({"text": text}).encode()),
                                      Entry(".reader/recall.json", json.dumps({"key": key}).encode())],
                                     uid=AGENT_UID, gid=AGENT_UID))
        started = " ".join(config["mcp"]["command"])
        where = "mcp.write_command" if mcp.write_command else "mcp.command"
        t0 = time.monotonic()
        result = sandbox.exec(["memgrid-reader", "--remember"], timeout=READER_SECONDS, workdir="/sandbox")
        events = _events(result.stdout)
        remembered = next((e for e in events if e.get("type") == "remembered"), None)
        stored = (remembered or {}).get("id")
        self.step("write", t0, stored is not None, f"{tool}: " + (f"stored {text!r}, id {stored!r}" if stored is not None
                                                                  else (remembered or {}).get("error") or "not called"))
        if stored is None:
            self.problem(*self.write_problem(write, tool, remembered, events, result, started, where))
            return
        t0 = time.monotonic()
        result = sandbox.exec(["memgrid-reader", "--answer"], timeout=READER_SECONDS, workdir="/sandbox")
        events = _events(result.stdout)
        search = f"{mcp.prefix}{mcp.search_tool}"
        ranked = next((e.get("ranked", []) for e in events if e.get("type") == "search" and e.get("tool") == search), [])
        recalled = next((e for e in events if e.get("type") == "recalled"), {})
        answered = (result.stdout.strip().splitlines() or [""])[-1]
        by_id = stored in ranked
        by_text = bool(recalled.get("matched")) and answered == value
        found = f"the stored one at rank {ranked.index(stored) + 1}" if by_id else "the stored line" if by_text else "not the stored one"
        self.step("recall", t0, by_id or by_text, f"{search} for {key!r}: {len(ranked)} hits, {found}")
        if not (by_id or by_text):
            field = "mcp.search.hit_pattern" if mcp.search.hit_pattern else "mcp.search.hits"
            self.problem(f"{y}: {field}", f"{search} for {key!r} returned {len(ranked)} hits, none carrying the id "
                         f"{stored!r} that {write.tool} answered or the line {text!r} it stored",
                         f"make {field} read an entry the write tool stored too, which has no header of the ingest's "
                         "(e.g. that header as an optional group, as in arms/mcp_memory_service/arm.yaml)")

    def write_problem(self, write, tool: str, remembered: dict | None, events: list[dict], result, started: str,
                      where: str) -> tuple[str, str, str]:
        """Why --remember stored nothing, as (where, what, fix)."""
        y = self.yaml
        init = next((e for e in events if e.get("type") == "init"), {})
        status = next(iter(init.get("mcp_servers", [])), {"status": "absent"})
        if status.get("status") != "connected":
            return (f"{y}: {where}", f"the server started as '{started}' to write failed "
                    f"({status.get('error') or _tail(result.stderr) or 'no init event'})",
                    f"make '{started}' serve MCP over stdio with its write tool '{write.tool}'")
        error = (remembered or {}).get("error", "")
        if remembered is None:
            return (f"{y}: mcp.write", f"memgrid-reader --remember wrote nothing ({_tail(result.stderr) or 'no remembered event'})",
                    "check that the arm's image keeps the sandbox image's /usr/local/bin and /opt/memgrid/pydeps")
        if error.startswith("the server lists no tool"):
            return (f"{y}: mcp.write.tool", f"'{write.tool}' is not among the tools the server lists ({', '.join(init.get('tools', []))})",
                    "name the server's own write tool")
        if error.startswith("the answer names no"):
            said = error.partition(": ")[2]
            if write.id_pattern:
                return (f"{y}: mcp.write.id_pattern", f"matches nothing in what {tool} answered to a store: {said[:200]!r}",
                        "write a regex that matches that answer, its group id around what names the stored item")
            return (f"{y}: mcp.write.id", f"names nothing in what {tool} answered to a store: {said[:200]!r}",
                    "give the dotted path of the stored item's id in that answer (e.g. entities.0.name)")
        return (f"{y}: mcp.write.arguments", f"{tool}({json.dumps(write.arguments)}) failed: {error[:200]}",
                'pass the tool\'s own argument names, with "{text}" where the text to remember goes')


    def contract(self, client, arm: ArmSpec, image: ImageRef, run_id: str) -> None:
        """A submission through its whole contract on a small generated person (CONTRACT_PERSON): build, search,
        one answer container per question, judged by the deterministic panel; each script's failure is named."""
        t0, app = time.monotonic(), f"arms/{arm.name}/app"
        person, period = CONTRACT_PERSON
        with tempfile.TemporaryDirectory(prefix="memgrid-armcheck-") as tmp:
            ctx = TrialContext(client, run_id, Path(tmp), self.images, {}, {arm.name: arm},
                               images_by_arm={arm.name: image}, protocol=PROTOCOLS["personal"])
            row = ctx.protocol.run_cell(ctx, CellSpec(person, arm.name, 0, period, "submission", "armcheck", 0), 1)
            phases = json.loads((Path(tmp) / "cells" / "armcheck" / "phases.json").read_text())
        ok = row.outcome == "scored"
        fama = json.loads(row.result)["fama"] if ok else None
        self.step("contract", t0, ok, f"person {person}, {period}: " + (f"FAMA {fama:.2f}" if ok else
                                                                         row.discard_reason or row.error_detail or ""))
        build = phases.get("build", {})
        if build.get("refused"):
            self.problem(f"{app}/build.sh", build["refused"], "write regular files only into --index-dir, under 1 GiB")
        if build.get("exit_code") not in (0, None):
            self.problem(f"{app}/build.sh", f"exited {build['exit_code']}: {_tail(build.get('log_tail', ''))}",
                         "exit 0 after writing the index into --index-dir")
        search = phases.get("search", {})
        for call in search.get("calls", []):
            if call["exit_code"] != 0:
                self.problem(f"{app}/search.sh", f"exited {call['exit_code']}: {_tail(call['stderr_tail'])}",
                             "write one line per query to --output and exit 0")
        if search.get("malformed_lines"):
            self.problem(f"{app}/search.sh", f"wrote {search['malformed_lines']} lines that are not a query's result "
                         f"(first: {search['malformed'][0][:80]!r})", 'write {"query_id": ..., "record_ids": [...]} per query')
        if search.get("violations"):
            self.problem(f"{app}/search.sh", f"returned {search['violations']} ids it may not (another person's, past "
                         "the cutoff, repeated or past the 350th)", "return at most 350 unique ids of records of "
                         "persona_id whose session <= cutoff_session")
        answered = phases.get("answer", {}).get("questions", {})
        problems = {q: a for q, a in answered.items() if a["problem_kind"]}
        if problems:
            q, first = next(iter(problems.items()))
            kinds = sorted({a["problem_kind"] for a in problems.values()})
            self.problem(f"{app}/answer.sh", f"{len(problems)} of {len(answered)} answers do not count "
                         f"({', '.join(kinds)}; {q}: {first['problem']})",
                         'write {"query_id": <the request\'s>, "answer": "<non-empty>"} to --output and exit 0')
        if not ok and not self.report.problems:
            self.problem(f"arms/{arm.name}/Dockerfile", f"the contract did not run: {row.discard_reason or row.error_detail}",
                         "build FROM ${BASE} and keep the sandbox image's /usr/local/bin")


def _cell(arm: ArmSpec) -> CellSpec:
    return CellSpec(task="armcheck", arm=arm.name, seed=SEED, condition=CONDITION, agent="reader",
                    cell_id=f"armcheck-{arm.name}", order_index=0)


def _events(stdout: str) -> list[dict]:
    """memgrid-reader's JSON events (an --answer session also prints its answer, not JSON, as its last line)."""
    events = []
    for raw in stdout.splitlines():
        try:
            events.append(json.loads(raw))
        except json.JSONDecodeError:
            continue
    return [e for e in events if isinstance(e, dict)]


def image_source(root: Path, arm: ArmSpec) -> ArmSpec:
    """The arm whose folder builds `arm`'s image (itself unless it names another with image_of)."""
    return arm if arm.image_of is None else image_arm(arm, load_all_arms(root))


def check_arm(root: Path, name: str, *, run_id: str | None = None, client=None,
              emit: Callable[[str], None] = print, log: Callable[[str], None] = lambda m: None) -> Report:
    """Preflight arms/NAME: every step and problem is emitted as a line as it happens."""
    started = time.monotonic()
    check = ArmCheck(root.resolve(), name, emit, log)
    arm = check.spec()
    run_id = run_id or f"armcheck-{uuid.uuid4().hex[:12]}"
    if arm is not None and arm_image_needed(image_source(root, arm).root):
        if client is None:
            from runner.env.engine import connect

            try:
                client = connect()
            except EngineError as e:
                check.problem("Docker engine", *_split_fix(e))
                return _finish(check, started)
        try:
            image = check.image(client, arm)
            if image is not None and kind_of(arm).own_server(arm) is not None:
                snapshot, target = check.ingest(client, arm, image, run_id)
                if snapshot is not None:
                    check.session(client, arm, image, snapshot, target, run_id)
            elif image is not None and kind_of(arm).submission:
                check.contract(client, arm, image, run_id)
        finally:
            remove_run_containers(client, run_id)
    return _finish(check, started)


def _finish(check: ArmCheck, started: float) -> Report:
    report, seconds = check.report, time.monotonic() - started
    check.emit(f"arm check {report.arm}: " + (f"ok ({seconds:.1f}s)" if report.ok else
                                               f"{len(report.problems)} problem{'s' * (len(report.problems) != 1)} ({seconds:.1f}s)"))
    return report
