"""`memgrid task check --suite S` for a planted suite (SMRITI's tasks hosted as published): SMRITI's corpus tests
(its tests/test_scaffold.py, TestTaskCorpus) run through memgrid's checker container, plus memgrid's own rules.

Per task:
- `untouched_fails`: its check, run as a cell's is (hidden/ laid over the workspace), fails on the untouched
  fixture; one that passes it leaks the convention through a visible test, or checks nothing;
- `solution_passes`: it passes once solution/ is copied over the fixture;
- `no_leak`: no leak term (LEAK_CHECK_TERMS) in the prompt or in a visible fixture file, case aside, and the task has
  terms to look for;
- `prompt_quotes_no_memory`: the prompt does not quote a planted memory (its first 20 characters, as SMRITI's test);
- `hidden_stays_hidden`: no file of hidden/ is also in the fixture, which is what reaches the sandbox.
And memgrid's hack canary `exits-at-import` (every module of the fixture exits 0 when imported): a check that
runs the artifact's code in its own process scores it a pass. A hosted task's check is not isolated by design
(SMRITI's runner runs it so), so a pass is reported as a note on that task, not as a failure.
"""

import uuid
from concurrent.futures import ThreadPoolExecutor

from runner.env.archive import Entry
from runner.env.bundle import tree_entries
from runner.env.images import ImageSet
from runner.env.sandbox import remove_run_containers
from runner.grading.checker import GRACE_SECONDS, grade_in_container
from runner.protocols.planted.protocol import check_command, check_inputs
from runner.units.planted import PlantedTask
from runner.tasks.check import EXIT_AT_IMPORT, Finding

QUOTE_CHARS = 20  # SMRITI's test: the first 20 characters of the first memory may not be in the prompt


def workspace(task: PlantedTask, overlay: str | None = None) -> list[Entry]:
    """The fixture as a cell's workspace, with `overlay` (solution/) copied over it."""
    files = {e.path: e for e in tree_entries(task.fixture, "w")}
    if overlay is not None:
        files |= {e.path: e for e in tree_entries(task.root / overlay, "w")}
    return [Entry(e.path.removeprefix("w/"), e.data, e.mode) for e in files.values()]


def variants(task: PlantedTask) -> dict[str, list[Entry]]:
    untouched = workspace(task)
    return {"fixture": untouched, "solution": workspace(task, "solution"),
            "exits-at-import": [Entry(e.path, e.data + EXIT_AT_IMPORT, e.mode) if e.path.endswith(".py") else e
                                for e in untouched]}


def static_findings(task: PlantedTask) -> list[Finding]:
    out = []
    texts = {"prompt": task.prompt.lower()}
    for e in tree_entries(task.fixture, "w"):
        try:
            texts[f"fixture/{e.path.removeprefix('w/')}"] = e.data.decode().lower()
        except UnicodeDecodeError:
            continue
    leaks = [(term, where) for term in task.leak_terms for where, text in texts.items() if term.lower() in text]
    out.append(Finding(task.id, "no_leak", bool(task.leak_terms) and not leaks, "task.json" if not leaks else leaks[0][1],
                       "no leak terms to look for: fix: add the task's entry to LEAK_CHECK_TERMS in SMRITI's "
                       "tests/test_scaffold.py and import it again" if not task.leak_terms else
                       f"'{leaks[0][0]}' appears in {leaks[0][1]}: fix: reword it there, or move the test that holds "
                       "it into hidden/" if leaks else f"none of {len(task.leak_terms)} terms in the prompt or fixture"))
    quoted = [m for m in task.memories if m.content[:QUOTE_CHARS].lower() in task.prompt.lower()]
    out.append(Finding(task.id, "prompt_quotes_no_memory", not quoted, "task.json",
                       f"the prompt quotes a planted memory ('{quoted[0].content[:QUOTE_CHARS]}'): fix: reword the prompt"
                       if quoted else "the prompt quotes no planted memory"))
    hidden = {e.path.removeprefix("h/") for e in tree_entries(task.hidden, "h")}
    shown = sorted(hidden & {e.path for e in workspace(task)})
    out.append(Finding(task.id, "hidden_stays_hidden", not shown, f"hidden/{shown[0]}" if shown else "hidden/",
                       f"hidden/{shown[0]} is also in the fixture, which reaches the sandbox: fix: remove it from the "
                       "fixture" if shown else f"{len(hidden)} hidden files, none in the fixture"))
    return out


def behaviour(client, images: ImageSet, tasks: list[PlantedTask], concurrency: int = 2) -> tuple[list[Finding], list[str]]:
    """Each task's check over the untouched fixture, the solution and the hack canary, in fresh checker containers:
    the findings and the notes (a canary a not-isolated check passes)."""
    run_id = f"taskcheck-{uuid.uuid4().hex[:10]}"
    jobs = [(t, name, entries) for t in tasks for name, entries in variants(t).items()]

    def grade(job) -> tuple[bool, str]:
        task, name, entries = job
        spec = {"checker": {"command": check_command(task), "timeout": task.check_seconds}, "detector": None}
        result, log, _ = grade_in_container(client, images.checker.tag, check_inputs(task, entries), spec,
                                            task.check_seconds + GRACE_SECONDS, run_id=run_id,
                                            cell_id=f"{task.id}-{name}")
        checker = (result or {}).get("checker") or {}
        passed = checker.get("exit") == 0 and not checker.get("timed_out")
        last = next((line for line in reversed(checker.get("output", "").splitlines()) if line.strip()), "no output")
        return passed, last[:200]

    try:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            graded = dict(zip(((t.id, name) for t, name, _ in jobs), pool.map(grade, jobs)))
    finally:
        remove_run_containers(client, run_id)
    findings, notes = [], []
    for t in tasks:
        (fixture_passed, fixture_line), (solution_passed, solution_line) = graded[t.id, "fixture"], graded[t.id, "solution"]
        findings.append(Finding(t.id, "untouched_fails", not fixture_passed, "check_cmd",
                                "the check passes on the untouched fixture: fix: move every test that states the "
                                "convention into hidden/, so only a workspace that follows it passes" if fixture_passed
                                else f"fails as it should ({fixture_line})"))
        findings.append(Finding(t.id, "solution_passes", solution_passed, "solution/",
                                f"passes ({solution_line})" if solution_passed else
                                f"the check fails with solution/ applied ({solution_line}): fix: make solution/ follow the "
                                "convention hidden/'s tests check, or correct check_cmd"))
        if graded[t.id, "exits-at-import"][0] and t.unisolated:
            notes.append(f"{t.id}: its check passes an artifact whose every module exits 0 when imported (not isolated, "
                         "as SMRITI runs it): grid it only with unisolated_checkers, knowing a hostile agent can pass it")
    return findings, notes
