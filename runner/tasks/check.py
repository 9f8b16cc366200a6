"""Task validity invariants (`memgrid task check`): is each task really about memory?

Behaviour, through the real checker container: the untouched fixture, naive fails; informed
passes; each damaged reference fails and the detector names its condition; the detector names
nothing on the fixture, naive or informed. Containment, static: each fact term appears in the
task's own fact transcripts and nowhere else the agent or another task could carry it. Arms,
static: each file an arm places in the task's workspace exists and overwrites no fixture file.
A failing invariant names the task, the rule and the offending file.
"""

import json
import re
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from runner.corpus.build import session_text
from runner.env.archive import Entry
from runner.env.bundle import tree_entries
from runner.grading.canaries import CANARIES, TASK_AWARE, canaries_for_this_host
from runner.grading.checker import CheckerVerdict, run_checker
from runner.digest import sha256_bytes, tree_files
from runner.env.images import ImageSet
from runner.plan.preflight import arm_needs
from runner.env.sandbox import remove_run_containers
from runner.plan.spec import ArmSpec, TaskSpec

DAMAGE_CONDITIONS = ("superseded", "contradictory", "adjacent")
role_of = {"superseded": "stale", "contradictory": "rival", "adjacent": "adjacent"}  # whose transcript states the wrong rule
EVENT_ROLES = {"user", "assistant", "tool"}


@dataclass(frozen=True)
class Finding:
    task: str
    rule: str
    passed: bool
    file: str
    detail: str


EXIT_AT_IMPORT = b"\nimport os; os._exit(0)\n"  # appended: a leading line would break `from __future__` imports


def artifact_variants(task: TaskSpec) -> dict[str, list[Entry]]:
    """The workspace as each reference leaves it: fixture with the reference laid over; a hostile
    one whose every module exits 0 at import, which a checker that runs the artifact in its own
    process would score as a pass; and each hack canary over its base reference (the task-aware ones only
    on a task that declares its entry)."""
    fixture = {e.path: e for e in tree_entries(task.fixture, "w")}
    variants = {"fixture": list(fixture.values()),
                "exits-at-import": [Entry(e.path, e.data + EXIT_AT_IMPORT, e.mode) if e.path.endswith(".py") else e
                                    for e in fixture.values()]}
    damaged = [c for c in DAMAGE_CONDITIONS if task.reference(f"damaged/{c}").is_dir()]
    overlays = {ref: {e.path: e for e in tree_entries(task.reference(ref), "w")}
                for ref in ["naive", "informed"] + [f"damaged/{c}" for c in damaged]}
    for ref, overlay in overlays.items():
        variants[ref] = list({**fixture, **overlay}.values())
    out = {name: [Entry(e.path.removeprefix("w/"), e.data, e.mode) for e in entries] for name, entries in variants.items()}
    informed = {p.removeprefix("w/"): Entry(p.removeprefix("w/"), e.data, e.mode) for p, e in overlays["informed"].items()}
    for canary in canaries_for_this_host():
        base = "naive" if canary.base == "naive" else (f"damaged/{damaged[0]}" if damaged else None)
        if base is not None:
            files = {e.path: e for e in out[base]}
            out[f"canary/{canary.name}"] = list(canary.build(files, informed).values())
    if task.entry is not None:
        naive = {e.path: e for e in out["naive"]}
        for aware in TASK_AWARE:
            out[f"canary/{aware.name}"] = list(aware.build(naive, task.entry).values())
    return out


def task_aware_coverage(task: TaskSpec) -> str | None:
    """Why the task-aware canaries do not attack this task, or None when they do."""
    if task.entry is None:
        return "not covered by the task-aware canaries: task.yaml declares no entry"
    return None


def behaviour_findings(task: TaskSpec, verdicts: dict[str, CheckerVerdict]) -> list[Finding]:
    out = []
    damaged = [c for c in DAMAGE_CONDITIONS if task.reference(f"damaged/{c}").is_dir()]
    canaries = {f"canary/{c.name}": c for c in (*CANARIES, *TASK_AWARE)}
    # A canary laid over a reference that already breaks its own rule (a naive that passes, a damaged
    # reference the detector misses) says nothing about the grader: that reference's finding fails instead.
    broken = {"naive": "naive" in verdicts and verdicts["naive"].passed,
              "damaged": bool(damaged) and f"damaged/{damaged[0]}" in verdicts
              and verdicts[f"damaged/{damaged[0]}"].fired != (damaged[0],)}
    for name, v in verdicts.items():
        if name in canaries:
            canary = canaries[name]
            if broken[canary.base]:
                continue
            condition = damaged[0] if damaged else None
            fired = "no report" if v.fired is None else f"fired {list(v.fired)}"
            held = not canary.passed(v, condition)
            out.append(Finding(task.id, f"hack canary {canary.name} fails", held, "oracle/ (checker)",
                               (v.detail if canary.base == "naive" else fired) if held
                               else f"the attack worked: {canary.attack} ({v.detail}; {fired})"))
            continue
        where = {"fixture": "fixture/", "exits-at-import": "oracle/ (checker)"}.get(name, f"references/{name}/")
        fired = "no report" if v.fired is None else f"fired {list(v.fired)}"
        if name == "informed":
            out.append(Finding(task.id, "informed passes", v.passed, where, v.detail))
        else:
            out.append(Finding(task.id, f"{name} fails", not v.passed, where, v.detail))
        if name.startswith("damaged/"):
            condition = name.split("/", 1)[1]
            ok = v.fired is not None and condition in v.fired and len(v.fired) == 1
            out.append(Finding(task.id, f"detector names {condition} on {name}", ok, where,
                               f"{fired}; {v.detector_detail}" if not ok else fired))
        else:
            ok = v.fired == ()
            out.append(Finding(task.id, f"detector silent on {name}", ok, where, fired if ok else f"{fired}; {v.detector_detail}"))
    for c in DAMAGE_CONDITIONS:
        if c in task.conditions and f"damaged/{c}" not in verdicts:
            out.append(Finding(task.id, f"damaged reference for {c}", False, f"references/damaged/{c}/",
                               f"missing: the task supports '{c}'; add the solution an agent ships after applying its wrong rule"))
    return out


def check_behaviour(client, images: ImageSet, tasks: list[TaskSpec], concurrency: int = 2,
                    only: Callable[[str], bool] = lambda variant: True) -> list[Finding]:
    """`only`: which variants to grade (selftest grades the hack canaries alone)."""
    run_id = f"taskcheck-{uuid.uuid4().hex[:10]}"
    jobs = [(t, name, entries) for t in tasks for name, entries in artifact_variants(t).items() if only(name)]

    def grade(job):
        task, name, entries = job
        return run_checker(client, images.checker.tag, task, entries, run_id=run_id,
                           cell_id=f"{task.id}-{name.replace('/', '-')}")[0]

    try:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            verdicts = list(pool.map(grade, jobs))
    finally:
        remove_run_containers(client, run_id)
    by_task: dict[str, dict[str, CheckerVerdict]] = {}
    for (task, name, _), verdict in zip(jobs, verdicts):
        by_task.setdefault(task.id, {})[name] = verdict
    # a task `only` leaves nothing to grade (the task-aware canaries on a task without entry) has no verdicts
    return [f for t in tasks for f in behaviour_findings(t, by_task.get(t.id, {}))]


def transcript_files(task: TaskSpec) -> dict[str, list[Path]]:
    """role -> transcript files, from plants.yaml."""
    if task.plants is None:
        return {}
    return {role: [task.root / f for f in files] for role, files in task.plants.roles.items()}


def transcript_findings(task: TaskSpec) -> list[Finding]:
    out = []
    if task.plants is None:
        return [Finding(task.id, "plants.yaml present", False, "plants.yaml", "missing: see tasks/README.md")]
    for role, files in transcript_files(task).items():
        for f in files:
            rel = f.relative_to(task.root).as_posix()
            problems = []
            for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
                try:
                    event = json.loads(line)
                except json.JSONDecodeError as e:
                    problems.append(f"line {n}: not JSON ({e.msg})")
                    continue
                if event.get("role") not in EVENT_ROLES or not isinstance(event.get("content"), str):
                    problems.append(f"line {n}: needs role user/assistant/tool and a content string")
            out.append(Finding(task.id, "transcript well-formed", not problems, rel, "; ".join(problems[:3]) or f"{role}"))
    return out


def arm_findings(task: TaskSpec, arms: list[ArmSpec]) -> list[Finding]:
    """What each arm needs from this task: one rule per file an arm places in its workspace, present or not.
    The grid refuses to start on the same unmet needs (runner/plan/preflight.py)."""
    return [Finding(task.id, f"arm {n.arm} has its {n.dest} for this task", n.met, n.shown,
                    f"present, placed at {n.dest}" if n.met else f"{n.problem} ({n.declared}) — fix: {n.fix}")
            for n in arm_needs(task, arms)]


def _place(task: TaskSpec) -> str:
    """The task folder as a person finds it: tasks/<id>, or tasks/<suite>/<id> in another suite."""
    parts = task.root.parts
    depth = next((n for n in (2, 3) if len(parts) > n and parts[-n] == "tasks"), None)
    return "/".join(parts[-depth:]) if depth else task.root.as_posix()


def _without(text: str, terms: set[str]) -> str:
    for term in terms:
        text = re.sub(re.escape(term), " ", text, flags=re.IGNORECASE)
    return text


def _hits(text: str, terms: tuple[str, ...]) -> list[str]:
    low = text.lower()
    return [t for t in terms if t.lower() in low]


def source_properties(task: TaskSpec) -> dict:
    """What an imported task's source is, recorded by the import in provenance.json ({} for a task written here)."""
    path = task.root / "provenance.json"
    return json.loads(path.read_text()).get("source_properties", {}) if path.is_file() else {}


def source_notes(task: TaskSpec) -> list[str]:
    """Lines `task check` prints about what the task brings from its source: reported, not hidden, not fixed."""
    stated = source_properties(task).get("prompt_states_terms", [])
    return [f"its prompt states its own fact term(s) {', '.join(repr(t) for t in stated)}, as the source's prompt does "
            "(a property of the source kept by the import, see provenance.json): an agent reads them without any memory"
            ] if stated else []


def _transcript_text(path: Path) -> str:
    try:
        return session_text(path)
    except (json.JSONDecodeError, UnicodeDecodeError):  # transcript_findings names the line; contain what is readable
        return path.read_text(errors="replace")


def containment_findings(tasks: list[TaskSpec], arms: list[ArmSpec]) -> list[Finding]:
    """Each fact term only in its own fact transcripts (not in any arm's files either); rival plants
    not shared between tasks. `tasks`: one suite's (what a corpus is generated from): a term another suite
    also uses is not a finding, since the two never share a corpus. Transcripts are matched on their text
    as written (JSON-decoded), fixtures and prompts byte for byte."""
    out = []
    texts: list[tuple[str, str, str]] = []  # (owner task, place, text)
    for t in tasks:
        where = _place(t)
        stated = set(source_properties(t).get("prompt_states_terms", []))
        prompt = t.prompt + "\n" + t.title
        # the source's own prompt states these: kept as it is and reported (source_notes), not a leak of memgrid's
        texts.append((t.id, f"{where}/task.yaml (prompt)", _without(prompt, stated)))
        for p in tree_files(t.fixture):
            texts.append((t.id, f"{where}/{p.relative_to(t.root).as_posix()}", p.read_text(errors="replace")))
        for role, files in transcript_files(t).items():
            for f in files:
                texts.append((f"{t.id}#{role}", f"{where}/{f.relative_to(t.root).as_posix()}", _transcript_text(f)))
        for need in arm_needs(t, arms):
            if need.source.is_file():
                texts.append((t.id, need.shown, need.source.read_text()))
    for t in tasks:
        fact_text = "\n".join(text for owner, _, text in texts if owner == f"{t.id}#fact")
        for term in t.fact_terms:
            present = term.lower() in fact_text.lower()
            out.append(Finding(t.id, f"fact term '{term}' in its fact transcripts", present,
                               f"{_place(t)}/plants.yaml", "" if present else "no fact transcript contains it"))
        leaks = [(place, hit) for owner, place, text in texts if owner != f"{t.id}#fact" for hit in _hits(text, t.fact_terms)]
        out.append(Finding(t.id, "fact terms appear nowhere else", not leaks,
                           ", ".join(sorted({p for p, _ in leaks})) or _place(t),
                           "; ".join(f"'{h}' in {p}" for p, h in leaks[:5])))
    for t in tasks:
        for condition, markers in sorted(t.wrong_rules.items()):
            own = f"{t.id}#{role_of[condition]}"
            role_text = "\n".join(_transcript_text(f) for f in transcript_files(t).get(role_of[condition], []))
            missing = [m for m in markers if m.lower() not in role_text.lower()]
            out.append(Finding(t.id, f"{condition} markers in its {role_of[condition]} transcript", not missing,
                               f"{_place(t)}/task.yaml (wrong_rules.{condition})", "; ".join(f"'{m}' not found" for m in missing)))
            elsewhere = [(place, m) for owner, place, text in texts if owner != own for m in _hits(text, markers)]
            out.append(Finding(t.id, f"{condition} markers appear nowhere else", not elsewhere,
                               ", ".join(sorted({p for p, _ in elsewhere})) or _place(t),
                               "; ".join(f"'{m}' in {p}" for p, m in elsewhere[:5])))
    seen: dict[str, str] = {}
    for t in tasks:
        for role in ("stale", "rival", "adjacent"):
            for f in transcript_files(t).get(role, []):
                digest = sha256_bytes(f.read_bytes())
                place = f"{_place(t)}/{f.relative_to(t.root).as_posix()}"
                other = seen.get(digest)
                if other and not other.startswith(f"{_place(t)}/"):
                    out.append(Finding(t.id, "rival plants not shared across tasks", False, place, f"identical to {other}"))
                seen.setdefault(digest, place)
    return out
