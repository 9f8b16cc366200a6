"""One cell's folder read back for a reviewer: its phases, each phase's gate proofs and its session as a
timeline, the checker's verdict and log, and the artifact's diff against the fixture it started from.

Every protocol writes the same per-phase records (bundle.manifest, proof.json, transcript.jsonl and, for
a model agent, gateway.jsonl and its CLI's raw stream: claude.stream.jsonl.gz, whose timeline is drawn here, or
codex.events.jsonl.gz, listed as a record while its transcript.jsonl is drawn): coding and planted in the cell folder itself,
two-session in step1/ and step2/. What a protocol writes besides (plant.json, phases.json ...) is listed
as a record. Texts are cut to `TEXT_CAP` characters with their full length stated: a page never inlines
a whole transcript or tool result.
"""

import difflib
import gzip
import hashlib
import io
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from runner.agents.stream_json import content_text

TEXT_CAP = 2000
DIFF_LINES = 400  # per file; the rest is counted
PHASE_FILES = ("proof.json", "transcript.jsonl")
SHOWN_ELSEWHERE = {"proof.json", "transcript.jsonl", "claude.stream.jsonl.gz", "gateway.jsonl", "bundle.manifest",
                   "artifact.tar", "checker.log", "store.tar", "model_requests.jsonl"}


@dataclass(frozen=True)
class Text:
    """A bounded excerpt of a text and how long the whole was."""
    excerpt: str
    chars: int

    @classmethod
    def of(cls, value) -> "Text":
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        return cls(text[:TEXT_CAP], len(text))

    @property
    def cut(self) -> bool:
        return self.chars > len(self.excerpt)


@dataclass(frozen=True)
class Step:
    """One entry of a session's timeline. kind: init | turn | tool_call | model_request | result | event."""
    kind: str
    title: str
    fields: tuple[tuple[str, Text], ...] = ()
    tokens: dict | None = None  # this step's usage by class (a model turn)
    failed: bool = False


@dataclass(frozen=True)
class Proof:
    name: str
    passed: bool
    detail: str


@dataclass
class Phase:
    name: str  # "" for a protocol of one session
    folder: Path
    proofs: list[Proof] = field(default_factory=list)
    admitted: bool | None = None
    discard_reason: str | None = None
    bundle_digest: str | None = None
    steps: list[Step] = field(default_factory=list)
    source: str = ""  # which record the timeline was read from


@dataclass(frozen=True)
class FileDiff:
    path: str
    status: str  # changed | added | removed
    lines: tuple[str, ...] = ()
    more_lines: int = 0
    note: str = ""


@dataclass
class CellRecord:
    folder: Path
    phases: list[Phase]
    verdict: dict | None
    checker_log: Text | None
    diff: list[FileDiff] | None  # None: no artifact (not exported, or a protocol without one)
    diff_note: str
    records: dict[str, Text]  # the protocol's other records, by file name


def _json(path: Path):
    try:
        return json.loads(path.read_text(errors="replace"))
    except (OSError, json.JSONDecodeError):
        return None


def _jsonl(path: Path) -> list[dict]:
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict):
            out.append(item)
    return out


def phase_folders(cell_dir: Path) -> list[tuple[str, Path]]:
    """The cell folder itself when it holds a phase's records, then each subfolder that does, by name."""
    found = [("", cell_dir)] if any((cell_dir / f).is_file() for f in PHASE_FILES) else []
    found += [(p.name, p) for p in sorted(cell_dir.iterdir())
              if p.is_dir() and any((p / f).is_file() for f in PHASE_FILES)]
    return found


def _usage_tokens(usage: dict | None) -> dict | None:
    if not isinstance(usage, dict):
        return None
    keys = {"fresh input": "input_tokens", "cache read": "cache_read_input_tokens",
            "cache creation": "cache_creation_input_tokens", "output": "output_tokens"}
    return {label: usage[k] for label, k in keys.items() if isinstance(usage.get(k), int)}


def stream_steps(lines) -> tuple[list[Step], dict[str, int]]:
    """Claude Code's stream-json as a timeline: init, each model turn with its tokens, each tool call with
    its input and result (paired by id), the final result; and each call's position in it, by id."""
    steps: list[Step] = []
    calls: dict[str, int] = {}
    priced: set[str] = set()  # the CLI prints a turn of parallel calls as one event per call, each with the turn's usage
    for line in lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(event, dict):
            continue
        kind, message = event.get("type"), event.get("message") or {}
        if kind == "system" and event.get("subtype") == "init":
            servers = ", ".join(f"{s.get('name')}: {s.get('status')}" for s in event.get("mcp_servers") or [])
            steps.append(Step("init", f"init: {len(event.get('tools') or [])} tools, MCP servers: {servers or 'none'} · "
                                      f"model {event.get('model')} · CLI {event.get('claude_code_version')}",
                              (("tools", Text.of(", ".join(event.get("tools") or []))),)))
        elif kind == "assistant":
            blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
            text = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            uses = [b for b in blocks if b.get("type") == "tool_use"]
            tokens = None if message.get("id") in priced else _usage_tokens(message.get("usage"))
            priced.add(message.get("id"))
            if text or not uses:
                steps.append(Step("turn", "model turn", (("text", Text.of(text)),) if text else (), tokens=tokens))
                tokens = None
            for b in uses:
                calls[b.get("id", "")] = len(steps)
                steps.append(Step("tool_call", f"tool call {b.get('name', '?')}", (("input", Text.of(b.get("input"))),),
                                  tokens=tokens))
                tokens = None
        elif kind == "user":
            for b in message.get("content") or []:
                if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") in calls:
                    at = calls[b["tool_use_id"]]
                    text = content_text(b.get("content"))
                    old = steps[at]
                    label = "error" if b.get("is_error") else "result"
                    steps[at] = Step(old.kind, old.title, old.fields + ((label, Text.of(text)),), old.tokens,
                                     failed=bool(b.get("is_error")))
        elif kind == "result":
            steps.append(Step("result", f"result: {event.get('subtype')} · {event.get('num_turns')} turns · "
                                        f"terminal reason {event.get('terminal_reason')}",
                              (("answer", Text.of(str(event.get("result", "")))),
                               ("permission denials", Text.of(event.get("permission_denials") or []))),
                              tokens=_usage_tokens(event.get("usage")), failed=bool(event.get("is_error"))))
    return steps, calls


def gateway_steps(entries: list[dict]) -> list[tuple[list[str], Step]]:
    """Each request the gateway saw, with the call ids whose results it delivered (to place it in the
    timeline after those calls)."""
    out = []
    for e in entries:
        if e.get("kind") == "model":
            tools = e.get("tools") or []
            delivered = e.get("tool_results") or []
            fields_ = [("tools offered", Text.of(", ".join(tools)))]
            fields_ += [(f"delivered {r.get('tool') or '?'} result", Text.of(r.get("text", ""))) for r in delivered]
            out.append(([r.get("call", "") for r in delivered],
                        Step("model_request", f"model request {e.get('path')} · {len(tools)} tools offered · status "
                                              f"{e.get('status')} · {e.get('seconds')} s", tuple(fields_),
                             failed=e.get("status") != 200)))
        else:
            out.append(([], Step("model_request", f"gateway {e.get('kind')}: {e.get('method', '')} "
                                                  f"{e.get('target') or e.get('host') or ''} -> {e.get('status')}",
                                 (("why", Text.of(str(e.get("why", "")))),), failed=True)))
    return out


def merge(session: list[Step], requests: list[tuple[list[str], Step]], call_ids: dict[str, int]) -> list[Step]:
    """The gateway's requests placed in the session's timeline: a request that delivered tool results goes
    after the last of those calls; one that delivered none after the request before it (the first after init)."""
    after: dict[int, list[Step]] = {}
    anchor = 0 if session and session[0].kind == "init" else -1
    for ids, step in requests:
        placed = [call_ids[i] for i in ids if i in call_ids]
        anchor = max([anchor, *placed])
        after.setdefault(anchor, []).append(step)
    merged = list(after.get(-1, []))
    for i, step in enumerate(session):
        merged.append(step)
        merged += after.get(i, [])
    return merged


def event_steps(events: list[dict]) -> list[Step]:
    """A transcript.jsonl (any agent) as a timeline: each event with its fields."""
    steps = []
    for e in events:
        kind = e.get("type", "event")
        data = {k: v for k, v in e.items() if k not in ("type", "t")}
        title = kind
        if kind == "init":
            servers = ", ".join(f"{s.get('name')}: {s.get('status')}" for s in data.get("mcp_servers") or [])
            title = f"init: {len(data.get('tools') or [])} tools, MCP servers: {servers or 'none'}"
        elif kind == "tool_call":
            title = f"tool call {data.get('tool')}"
        steps.append(Step("init" if kind == "init" else "tool_call" if kind == "tool_call" else "event", title,
                          tuple((k, Text.of(v)) for k, v in sorted(data.items())),
                          tokens=_usage_tokens(data.get("usage")) if kind == "result" else None,
                          failed=bool(data.get("is_error"))))
    return steps


def read_phase(name: str, folder: Path) -> Phase:
    phase = Phase(name, folder)
    proof = _json(folder / "proof.json")
    if isinstance(proof, dict):
        phase.proofs = [Proof(p.get("name", "?"), bool(p.get("passed")), str(p.get("detail", "")))
                        for p in proof.get("proofs") or []]
        phase.admitted, phase.discard_reason = proof.get("admitted"), proof.get("discard_reason")
        phase.bundle_digest = proof.get("bundle_digest")
    stream = folder / "claude.stream.jsonl.gz"
    if stream.is_file():
        with gzip.open(stream, "rt", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        requests = gateway_steps(_jsonl(folder / "gateway.jsonl")) if (folder / "gateway.jsonl").is_file() else []
        session, calls = stream_steps(lines)
        phase.steps = merge(session, requests, calls)
        phase.source = "claude.stream.jsonl.gz" + (" and gateway.jsonl" if requests else "")
    elif (folder / "transcript.jsonl").is_file():
        phase.steps = event_steps(_jsonl(folder / "transcript.jsonl"))
        phase.source = "transcript.jsonl"
    if (folder / "prefetch.jsonl").is_file():  # what the harness fetched before the session, in order
        phase.steps = [Step("event", "prefetch (by the harness, before the session)")] + \
            event_steps(_jsonl(folder / "prefetch.jsonl")) + phase.steps
    return phase


def _tar_files(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name.removeprefix("./"): tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def _manifest(path: Path) -> dict[str, str]:
    out = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            digest, _, name = line.partition("  ")
            if name:
                out[name] = digest
    return out


def artifact_diff(artifact: Path, fixture: Path | None, manifest: dict[str, str]) -> tuple[list[FileDiff], str]:
    """The artifact against the fixture the cell started from. The fixture is read from the project, and
    each file is used only if its sha256 is the one the cell's bundle manifest recorded (workspace/<path>):
    a fixture edited since the run is never passed off as the cell's starting point."""
    after = _tar_files(artifact.read_bytes())
    started = {name.removeprefix("workspace/"): d for name, d in manifest.items() if name.startswith("workspace/")}
    before: dict[str, bytes] = {}
    stale: list[str] = []
    if fixture is not None and fixture.is_dir():
        for path in sorted(p for p in fixture.rglob("*") if p.is_file()):
            rel = path.relative_to(fixture).as_posix()
            data = path.read_bytes()
            if rel in started and hashlib.sha256(data).hexdigest() != started[rel]:
                stale.append(rel)
            elif rel in started:
                before[rel] = data
    missing = sorted(set(started) - set(before) - set(stale))
    note = "" if fixture is not None else "the task's fixture is not in this project; "
    if stale:
        note += f"fixture files changed since the run, not diffed: {', '.join(stale)}; "
    diffs = []
    for rel in sorted(set(before) | set(after)):
        if rel in stale:
            continue
        old, new = before.get(rel), after.get(rel)
        if old == new:
            continue
        if old is None and rel in started:
            diffs.append(FileDiff(rel, "changed", note="in the bundle, but its fixture file is not at hand"))
            continue
        status = "added" if old is None else "removed" if new is None else "changed"
        lines = list(difflib.unified_diff((old or b"").decode(errors="replace").splitlines(),
                                          (new or b"").decode(errors="replace").splitlines(),
                                          f"fixture/{rel}", f"artifact/{rel}", lineterm=""))
        diffs.append(FileDiff(rel, status, tuple(lines[:DIFF_LINES]), max(0, len(lines) - DIFF_LINES)))
    if missing and fixture is not None:
        note += f"not at hand in the fixture: {', '.join(missing)}; "
    return diffs, note.rstrip("; ")


def read_cell(cell_dir: Path, fixture: Path | None) -> CellRecord:
    """`fixture`: the task's fixture folder in this project (None when the protocol has none or it is gone)."""
    phases = [read_phase(name, folder) for name, folder in phase_folders(cell_dir)] if cell_dir.is_dir() else []
    verdict = _json(cell_dir / "verdict.json")
    log = cell_dir / "checker.log"
    diff, note = None, ""
    if (cell_dir / "artifact.tar").is_file():
        diff, note = artifact_diff(cell_dir / "artifact.tar", fixture, _manifest(cell_dir / "bundle.manifest"))
    records = {}
    if cell_dir.is_dir():
        for path in sorted(p for p in cell_dir.rglob("*") if p.is_file() and p.name not in SHOWN_ELSEWHERE):
            records[path.relative_to(cell_dir).as_posix()] = Text.of(path.read_text(errors="replace"))
    return CellRecord(cell_dir, phases, verdict if isinstance(verdict, dict) else None,
                      Text.of(log.read_text(errors="replace")) if log.is_file() else None, diff, note, records)
