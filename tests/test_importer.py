"""`memgrid task import --format amb`: a synthetic agent-memory-bench checkout (tests/data/amb/, written for
these tests in amb's layout, none of amb's content) imports into a memgrid task that passes `task check`
through the real checker container; each reason a task cannot be imported refuses that task alone, and a
checker that runs artifact code outside run_bounded is imported marked unisolated, by name."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from runner.sources.amb import CHECKER_RUN, import_tasks
from runner.plan.spec import load_all_arms, load_all_tasks, load_suite_tasks
from runner.tasks.check import arm_findings, check_behaviour, containment_findings, source_notes, transcript_findings

REPO = Path(__file__).resolve().parent.parent
AMB = REPO / "tests" / "data" / "amb"
SUITE_NAME = "amb"  # the suite the import writes into: tasks/amb/
GOOD = "zz-size-report"
IMPORTED = "amb_zz_size_report"
# The whole synthetic checkout: six tasks (a suite), each passing task check once imported. Three carry what a
# faithful import must keep as it is: a fact term with the two-character escapes \r\n (zz-crlf-handoff), held-out
# outputs that start with a UTF-8 byte-order mark (zz-bom-manifest), a prompt that states one of its own fact
# terms (zz-lap-clock).
SUITE = ("zz-bom-manifest", "zz-crlf-handoff", "zz-fiscal-label", "zz-lap-clock", "zz-page-spans", GOOD)
SUITE_IDS = ["amb_" + t.replace("-", "_") for t in SUITE]  # in import order: the task folders sorted


def failures(findings):
    return [f"{f.task}: {f.rule}: {f.file}: {f.detail}" for f in findings if not f.passed]


@pytest.fixture
def amb(tmp_path) -> Path:
    """A private copy of the synthetic amb checkout that a test may break."""
    root = tmp_path / "amb"
    shutil.copytree(AMB, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def clone(root: Path, new_id: str) -> Path:
    """A second task: the good one under another id, with its recorded sessions and oracle."""
    for base in ("tasks", "oracles", "corpus/sessions", "corpus/plants"):
        shutil.copytree(root / base / GOOD, root / base / new_id)
    meta = root / "tasks" / new_id / "task.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "task_id": new_id}))
    return root / "tasks" / new_id


def test_a_synthetic_amb_task_imports_and_passes_task_check(engine, images, project, amb):
    result = import_tasks(amb / "tasks" / GOOD, project, SUITE_NAME)
    assert [p.task_id for p in result.plans] == [IMPORTED] and not result.refusals
    task = load_all_tasks(project)[IMPORTED]
    assert task.conditions == ("absent", "present", "superseded", "contradictory", "adjacent")
    arms = list(load_all_arms(project).values())
    findings = containment_findings(list(load_all_tasks(project).values()), arms)
    findings = [f for f in findings if f.task == IMPORTED] + transcript_findings(task) + arm_findings(task, arms)
    behaviour = check_behaviour(engine, images, [task])
    assert not failures(findings + behaviour)
    # the verdicts are amb's own: its checker's reason reaches memgrid's detail line
    assert any("render(4096) gave 'total: 4096 bytes'" in f.detail for f in behaviour if f.rule == "naive fails")
    assert {f.rule for f in behaviour} >= {"exits-at-import fails", "detector names contradictory on damaged/contradictory"}


def test_every_task_of_the_synthetic_suite_passes_task_check(engine, images, project, amb):
    """The other five tasks of the checkout, as the first test does zz-size-report: each imports, and passes every
    behaviour rule through the real checker container (fixture, naive and each damaged reference fail, informed
    passes, the detector names exactly each damaged reference's condition and nothing on the others, the hack
    canaries hold) and every static rule: zz-crlf-handoff's term '\\r\\n line endings' is found in its transcript's
    text (the file on disk escapes its backslashes again), and zz-lap-clock's prompt stating its own term is the
    source's property, reported as a note, not a containment failure."""
    result = import_tasks(amb / "tasks", project, SUITE_NAME)
    assert [p.task_id for p in result.plans] == SUITE_IDS and not result.refusals
    tasks = load_all_tasks(project)
    others = [tasks[i] for i in SUITE_IDS if i != IMPORTED]
    for task in others:
        assert task.conditions == ("absent", "present", "superseded", "contradictory", "adjacent"), task.id
    arms = list(load_all_arms(project).values())
    static = [f for f in containment_findings(list(load_suite_tasks(project, SUITE_NAME).values()), arms)
              if f.task in SUITE_IDS]
    static += [f for t in others for f in transcript_findings(t) + arm_findings(t, arms)]
    assert not failures(static)
    assert [bool(source_notes(t)) for t in others] == [t.id == "amb_zz_lap_clock" for t in others]
    behaviour = check_behaviour(engine, images, others)
    assert not failures(behaviour)
    for task in others:
        rules = {f.rule for f in behaviour if f.task == task.id}
        assert {"fixture fails", "naive fails", "informed passes", "exits-at-import fails",
                *(f"detector names {c} on damaged/{c}" for c in ("superseded", "contradictory", "adjacent"))} <= rules
        assert any(r.startswith("hack canary ") for r in rules), task.id


def test_the_import_keeps_escapes_byte_order_marks_and_a_prompt_that_states_a_term(project, amb):
    """What the source is, the import keeps: a fact term with the two characters \\ and r (not a carriage return),
    stated so in the fact session; held-out outputs whose first bytes are a UTF-8 byte-order mark, which the checker
    compares byte for byte; a prompt that states its own fact term, not rewritten to hide it."""
    import_tasks(amb / "tasks", project, SUITE_NAME)
    tasks = load_all_tasks(project)
    crlf = tasks["amb_zz_crlf_handoff"]
    term = "\\r\\n line endings"
    assert len(term) == 17 and "\r" not in term and term in crlf.fact_terms
    assert json.loads((amb / "tasks/zz-crlf-handoff/task.json").read_text())["fact_terms"][0] == term
    fact = [json.loads(line) for line in (crlf.root / "corpus/fact_p01.jsonl").read_text().splitlines()]
    assert term in fact[-1]["content"] and term in crlf.fact_summary
    cases = json.loads((crlf.root / "oracle/amb/oracle/cases.json").read_text())
    assert cases[0]["expected"].endswith("000132.50\r\n")  # real CR LF bytes in the held-out output
    bom = tasks["amb_zz_bom_manifest"].root / "oracle/amb/oracle/expected"
    source = amb / "oracles/zz-bom-manifest/expected"
    assert sorted(p.name for p in bom.iterdir()) == sorted(p.name for p in source.iterdir()) == ["01.txt", "02.txt", "03.txt"]
    for path in source.iterdir():
        assert (bom / path.name).read_bytes() == path.read_bytes() and path.read_bytes().startswith(b"\xef\xbb\xbf")
    lap = tasks["amb_zz_lap_clock"]
    stated = json.loads((amb / "tasks/zz-lap-clock/task.json").read_text())["prompt"]
    assert lap.prompt == stated + "\n" and "lap-clock convention" in lap.prompt and "lap-clock convention" in lap.fact_terms


IN_PROCESS_CHECKER = '''import json, sys


def check(workdir, oracle_dir):
    sys.path.insert(0, str(workdir))
    from report import render
    for total, expected in json.loads((oracle_dir / "cases.json").read_text()):
        if render(total) != expected:
            return False, f"render({total}) gave {render(total)!r}"
    return True, "all cases"
'''


def test_an_amb_checker_that_runs_the_artifact_in_process_is_imported_marked_unisolated_by_name(project, amb):
    """amb calls check() in its own process, which here is the judge's (it can read /oracle): a checker that
    imports the artifact there would hand it the answers. It is imported, marked in task.yaml with the file,
    the line and the construct, and the import says what that means."""
    (amb / "tasks" / GOOD / "checker.py").write_text(IN_PROCESS_CHECKER)
    result = import_tasks(amb / "tasks" / GOOD, project, SUITE_NAME)
    assert [p.task_id for p in result.plans] == [IMPORTED] and not result.refusals
    why = load_all_tasks(project)[IMPORTED].checker.unisolated
    assert why.startswith("oracle/amb/checker.py line 5: sys.path.insert can run artifact code in the judge's process"), why
    line = result.plans[0].unisolated_line()
    assert line.startswith(f"unisolated {IMPORTED}: {why}; ") and "\n" not in line, line
    assert "a grid grades it only when it names it under unisolated_checkers" in line
    assert "to isolate it: run artifact code through harness.checker_run.run_bounded" in line


# The graded function of a hostile artifact that does not solve the task: it reads amb's held-out cases where
# the import puts them (oracle/amb/oracle/ under the task, /oracle in the checker container) and returns the answer.
READS_THE_ANSWERS = '''import json


def render(total: int) -> str:
    for n, expected in json.load(open("/oracle/amb/oracle/cases.json")):
        if n == total:
            return expected
    return f"total: {total} bytes"
'''


def test_an_artifact_that_reads_the_oracle_passes_with_ambs_checker_run_and_fails_with_memgrids(
        engine, images, project, amb, run_id):
    from runner.env.archive import Entry
    from runner.grading.checker import run_checker
    from runner.tasks.check import artifact_variants

    import_tasks(amb / "tasks" / GOOD, project, SUITE_NAME)
    control = project.parent / "control"  # the same import with amb's own checker_run.py vendored back
    shutil.copytree(project / "tasks" / SUITE_NAME / IMPORTED, control / "tasks" / SUITE_NAME / IMPORTED)
    shutil.copyfile(project / "tasks" / SUITE_NAME / "suite.yaml", control / "tasks" / SUITE_NAME / "suite.yaml")
    shutil.copyfile(AMB / "harness/checker_run.py",
                    control / "tasks" / SUITE_NAME / IMPORTED / "oracle/amb/harness/checker_run.py")
    hostile = [Entry(e.path, READS_THE_ANSWERS.encode(), e.mode) if e.path == "report.py" else e
               for e in artifact_variants(load_all_tasks(project)[IMPORTED])["naive"]]

    def grade(root: Path, name: str):
        task = load_all_tasks(root)[IMPORTED]
        return run_checker(engine, images.checker.tag, task, hostile, run_id=run_id, cell_id=name)[0]

    isolated, amb_own = grade(project, "isolated"), grade(control, "amb-checker-run")
    assert amb_own.passed, f"the attack is not real: amb's run_bounded failed it too ({amb_own.detail})"
    assert not isolated.passed
    assert "render(4096) gave None" in isolated.detail, isolated.detail


def checker_run_module(tmp_path: Path, monkeypatch, forged: bytes | None = None):
    """memgrid's checker_run.py with a stand-in memgrid_check whose run_artifact runs argv here, in an empty
    folder of its own (as memgrid-grade runs it in /home/artifact); `forged`: what it prints instead."""
    import importlib.util
    import sys
    import types

    def run_artifact(argv, *, stdin=b"", timeout):
        home = tmp_path / f"artifact-home-{len(list(tmp_path.glob('artifact-home-*')))}"
        home.mkdir()
        try:
            done = subprocess.run(argv, input=stdin, capture_output=True, cwd=home, timeout=timeout)
        except subprocess.TimeoutExpired:
            return types.SimpleNamespace(exit=None, timed_out=True, stdout=b"", stderr=b"", seconds=timeout)
        out = done.stdout if forged is None else forged
        return types.SimpleNamespace(exit=done.returncode, timed_out=False, stdout=out, stderr=done.stderr,
                                     seconds=0.1, tail=lambda: done.stderr.decode()[-200:])

    monkeypatch.setitem(sys.modules, "memgrid_check",
                        types.SimpleNamespace(PYTHON=[sys.executable, "-I", "-B"], run_artifact=run_artifact))
    (tmp_path / "checker_run.py").write_text(CHECKER_RUN)
    spec = importlib.util.spec_from_file_location("memgrid_checker_run", tmp_path / "checker_run.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_memgrids_run_bounded_runs_a_copy_of_cwd_and_lays_back_what_the_command_wrote(tmp_path, monkeypatch):
    import sys

    run = checker_run_module(tmp_path, monkeypatch)
    stage = tmp_path / "judge" / "stage"
    (stage / "pkg").mkdir(parents=True)
    (stage / "pkg/data.txt").write_text("old")
    (stage / "gone.txt").write_text("kept")
    probe = ("import os, sys; from pathlib import Path; root = Path(sys.argv[1]); assert root == Path.cwd(), root;"
             "(root / 'pkg/data.txt').write_text('new'); (root / 'out').mkdir(); (root / 'out/r.txt').write_text('made');"
             "(root / 'gone.txt').unlink(); print(os.environ['EXTRA'], (root / 'pkg/data.txt').read_text())")
    done = run.run_bounded([sys.executable, "-c", probe, str(stage)], cwd=stage, timeout_s=20, env={"EXTRA": "x"})
    assert (done.returncode, done.stdout, done.timed_out, done.ok) == (0, "x new\n", False, True), done
    # the judge's path reached the command as its own copy's (the assert above), and what it wrote came back
    assert (stage / "pkg/data.txt").read_text() == "new" and (stage / "out/r.txt").read_text() == "made"
    assert (stage / "gone.txt").read_text() == "kept"  # a deletion is not laid back
    slow = run.run_bounded([sys.executable, "-c", "import time; time.sleep(30)"], cwd=stage, timeout_s=0.5)
    assert (slow.returncode, slow.stdout, slow.stderr, slow.timed_out) == (None, "", "timed out", True)
    assert run.run_bounded(["/nonexistent/python"], cwd=stage, timeout_s=5).returncode == 127


def test_memgrids_run_bounded_lays_back_only_regular_files_inside_cwd(tmp_path, monkeypatch):
    """The report is the artifact's to write: a forged one naming paths out of cwd, through a link in it, or a
    link of its own changes nothing outside cwd; a malformed one reads as a failed command."""
    import base64
    import io
    import tarfile

    outside = tmp_path / "outside"
    outside.mkdir()
    stage = tmp_path / "judge" / "stage"
    stage.mkdir(parents=True)
    (stage / "link").symlink_to(outside)
    (stage / "victim").symlink_to(outside / "victim.txt")
    forged = io.BytesIO()
    with tarfile.open(fileobj=forged, mode="w") as tar:
        for name in ("../escaped.txt", "/abs.txt", "link/through.txt", "victim", "ok/fine.txt"):
            info = tarfile.TarInfo(name)
            info.size = 4
            tar.addfile(info, io.BytesIO(b"evil"))
        info = tarfile.TarInfo("planted-link")
        info.type, info.linkname = tarfile.SYMTYPE, str(outside)
        tar.addfile(info)
    line = json.dumps({"returncode": 0, "stdout": "ok", "stderr": "", "seconds": 0.1,
                       "files": base64.b64encode(forged.getvalue()).decode()})
    run = checker_run_module(tmp_path, monkeypatch, forged=line.encode() + b"\n")
    assert run.run_bounded(["true"], cwd=stage, timeout_s=5).stdout == "ok"
    assert sorted(p.name for p in outside.iterdir()) == [] and not (tmp_path / "judge/escaped.txt").exists()
    assert (stage / "ok/fine.txt").read_text() == "evil"
    assert (stage / "victim").is_file() and not (stage / "victim").is_symlink()  # the link replaced, not followed
    assert not os.path.lexists(stage / "planted-link") and not Path("/abs.txt").exists()  # a leading / is dropped, as tar does
    for junk in (b"", b"not json\n", b'{"returncode": "0", "stdout": "", "stderr": "", "seconds": 0, "files": ""}\n'):
        bad = checker_run_module(tmp_path, monkeypatch, forged=junk).run_bounded(["true"], cwd=stage, timeout_s=5)
        assert bad.returncode == 1 and "gave no usable report" in bad.stderr, bad


def test_import_maps_transcripts_references_plants_and_provenance(project, amb):
    result = import_tasks(amb / "tasks", project, SUITE_NAME)
    assert [p.task_id for p in result.plans] == SUITE_IDS and not result.refusals
    root = project / "tasks" / SUITE_NAME / IMPORTED
    fact = [json.loads(line) for line in (root / "corpus/fact_p01.jsonl").read_text().splitlines()]
    # amb's assistant event carries its tool's result; memgrid's is a separate tool event; ts goes (the build dates)
    assert [e["role"] for e in fact] == ["user", "assistant", "tool", "assistant", "user"]
    assert fact[1]["tool_input"] == {"file_path": "C:\\tmp\\project\\incident\\friday.txt"}
    assert fact[2] == {"role": "tool", "tool_name": "Read", "content": "1\tdashboard: 10.24 kB\n2\tnightly: 10240\n"}
    assert not any("ts" in e for e in fact)
    plants = load_all_tasks(project)[IMPORTED].plants
    assert plants.roles["rival"] == ("corpus/rival_equals_form.jsonl", "corpus/rival_upper_total.jsonl")
    assert plants.conditions == {"absent": (), "present": ("fact",), "superseded": ("stale", "fact"),
                                 "contradictory": ("rival",), "adjacent": ("adjacent",)}
    # a reference is what amb's apply() wrote over the fixture, nothing else
    assert sorted(p.name for p in (root / "references/informed").rglob("*") if p.is_file()) == ["report.py"]
    assert "total // 1024" in (root / "references/informed/report.py").read_text()
    # amb's checker, detector and the harness module they import travel unchanged; its package __init__ does not
    assert (root / "oracle/amb/checker.py").read_bytes() == (amb / "tasks" / GOOD / "checker.py").read_bytes()
    # ...but for amb's chokepoint for running the artifact: memgrid's checker_run.py runs it as the artifact's user
    vendored_run = (root / "oracle/amb/harness/checker_run.py").read_text()
    assert vendored_run == CHECKER_RUN and "replaces agent-memory-bench's module" in vendored_run
    assert "harness/checker_run.py" in json.loads((root / "provenance.json").read_text())["mapped"]
    assert (root / "oracle/amb/harness/__init__.py").read_bytes() == b""
    assert json.loads((root / "oracle/amb_conditions.json").read_text()) == ["superseded", "contradictory", "adjacent"]
    wrong = load_all_tasks(project)[IMPORTED].wrong_rules
    assert wrong["adjacent"] == ("two-decimal MiB figures",)  # 'MiB' is under the schema's 4 characters
    provenance = json.loads((root / "provenance.json").read_text())
    assert provenance["format"] == "amb" and len(provenance["source"]["inputs_sha256"]) == 64
    assert provenance["mapped"]["transcripts"]["corpus/fact_p01.jsonl"] == f"recorded: corpus/sessions/{GOOD}/p01.jsonl"
    assert provenance["not_mapped"] == ["damaged_contradictory__upper.py"]
    claude_md = (project / "arms/claude_md/tasks" / IMPORTED / "CLAUDE.md").read_text()
    assert "`report.py` renders the one line" in claude_md
    placebo = (project / "arms/placebo/tasks" / IMPORTED / "CLAUDE.md").read_text()
    assert len(placebo.splitlines()) == len(claude_md.splitlines()) and "report.py" not in placebo


def test_dry_run_lists_and_writes_nothing(project, amb):
    before = sorted(p for p in project.rglob("*"))
    result = import_tasks(amb / "tasks", project, SUITE_NAME, dry_run=True)
    assert [p.task_id for p in result.plans] == SUITE_IDS and not result.refusals
    assert all(f"tasks/{SUITE_NAME}/{p.task_id}/task.yaml" in p.files for p in result.plans)
    assert sorted(p for p in project.rglob("*")) == before


def test_an_unrecorded_session_is_rendered_only_when_asked(project, amb):
    (amb / "corpus/sessions" / GOOD / "p01.jsonl").unlink()
    refused = import_tasks(amb / "tasks", project, SUITE_NAME)
    assert [r.source.name for r in refused.refusals] == [GOOD]
    assert refused.refusals[0].reason.startswith(f"corpus/sessions/{GOOD}/p01.jsonl: (file): is missing")
    assert [p.task_id for p in refused.plans] == [i for i in SUITE_IDS if i != IMPORTED]  # the recorded ones go on
    result = import_tasks(amb / "tasks" / GOOD, project, SUITE_NAME, render=True)
    assert [p.task_id for p in result.plans] == [IMPORTED]
    assert "1 transcript(s) rendered from staging" in result.plans[0].notes
    events = [json.loads(line) for line in (project / "tasks" / SUITE_NAME / IMPORTED / "corpus/fact_p01.jsonl").read_text().splitlines()]
    assert [e["role"] for e in events] == ["user", "assistant", "tool", "user"]
    assert events[1]["tool_input"] == {"file_path": "incident/friday.txt"}
    assert events[2]["content"] == "dashboard: 10.24 kB\nnightly: 10240\n"
    assert "binary-thousands rule" in events[3]["content"]


def _write_json(path: Path, **changes) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


def _reference(task: Path, name: str, body: str) -> None:
    (task / "reference" / f"{name}.py").write_text(f"from pathlib import Path\n\n\ndef apply(workdir):\n{body}\n")


def _plants(task: Path, edit) -> None:
    data = json.loads((task / "plants.json").read_text())
    edit(data)
    (task / "plants.json").write_text(json.dumps(data))


REFUSALS = {
    "control task": (lambda t, r: _write_json(t / "task.json", kind="control"), "kind: is 'control'"),
    "task.json not JSON": (lambda t, r: (t / "task.json").write_text("{"), "task.json: (file): is not JSON"),
    "no fact terms": (lambda t, r: _write_json(t / "task.json", fact_terms=[]), "fact_terms: is not a non-empty list"),
    "task_id mismatch": (lambda t, r: _write_json(t / "task.json", task_id="other"), "task_id: is 'other'"),
    "no tree": (lambda t, r: shutil.rmtree(t / "tree"), "tree/: is missing"),
    "no precursors": (lambda t, r: shutil.rmtree(t / "precursors"), "precursors/: holds no session"),
    "unrecorded session": (lambda t, r: (r / "corpus/sessions/zz-broken/p01.jsonl").unlink(),
                           "was staged but never recorded"),
    "session with a foreign role": (
        lambda t, r: (r / "corpus/sessions/zz-broken/p01.jsonl").write_text('{"role": "system", "content": "x"}\n'),
        "line 1: has role 'system'"),
    "checker runs git": (lambda t, r: (t / "checker.py").write_text(
        "import subprocess\n\ndef check(workdir, oracle_dir):\n    subprocess.run(['git', 'diff'])\n    return True, ''\n"),
        "checker.py: git: needs git or bash"),
    "checker needs a third-party module": (lambda t, r: (t / "checker.py").write_text(
        "import yaml\n\ndef check(workdir, oracle_dir):\n    return True, ''\n"), "import: needs 'yaml'"),
    "harness module missing": (lambda t, r: (t / "damage.py").write_text(
        "from harness.nowhere import x\n\ndef detect(workdir, oracle_dir, condition):\n    return False, ''\n"),
        "harness/nowhere.py: (file): is missing"),
    "checker not Python": (lambda t, r: (t / "checker.py").write_text("def check(:\n"), "checker.py: line 1: is not valid Python"),
    "oracle missing": (lambda t, r: shutil.rmtree(r / "oracles/zz-broken"),
                       "oracles/zz-broken: (folder): is missing but the checker reads oracle_dir"),
    "reference fails": (lambda t, r: _reference(t, "naive", "    raise RuntimeError('boom')"),
                        "reference/naive.py: apply: failed on the fixture (RuntimeError: boom)"),
    "reference deletes": (lambda t, r: _reference(t, "naive", "    (Path(workdir) / 'README.md').unlink()"),
                          "apply: deletes README.md"),
    "reference changes nothing": (lambda t, r: _reference(t, "naive", "    pass"), "apply: changes nothing"),
    "reference missing": (lambda t, r: (t / "reference/informed.py").unlink(), "reference/informed.py: (file): is missing"),
    "undeclared plant": (lambda t, r: _plants(t, lambda d: d["conditions"]["adjacent"].update(plants=["ghost"])),
                         "conditions.adjacent.plants: names undeclared plant 'ghost'"),
    "condition of the wrong shape": (lambda t, r: _plants(t, lambda d: d["conditions"]["superseded"].update(include_real=False)),
                                     "conditions.superseded.include_real: differs from amb's preregistered shape"),
    "markers too short": (lambda t, r: _plants(t, lambda d: d["plants"]["adjacent_mib_dashboard"].update(wrong_terms=["MiB"])),
                          "adjacent wrong_terms: are all shorter than 4 characters"),
    "already imported": (lambda t, r: None, "amb_zz_broken: (folder): already exists"),
}


def good_and_broken(root: Path) -> Path:
    """The checkout with the good task alone beside a clone of it (zz-broken) that a test breaks: one task is enough
    to show the others go on, and each of the suite's other five would be imported again by every case."""
    for task in (root / "tasks").iterdir():
        if task.name != GOOD:
            shutil.rmtree(task)
    return clone(root, "zz-broken")


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_task_that_cannot_be_imported_is_refused_and_the_others_go_on(case, project, amb):
    breaks, reason = REFUSALS[case]
    broken = good_and_broken(amb)
    breaks(broken, amb)
    if case == "already imported":
        assert [p.task_id for p in import_tasks(broken, project, SUITE_NAME).plans] == ["amb_zz_broken"]
    result = import_tasks(amb / "tasks", project, SUITE_NAME)
    assert [p.task_id for p in result.plans] == [IMPORTED]
    assert len(result.refusals) == 1 and result.refusals[0].source.name == "zz-broken"
    line = result.refusals[0].line()
    assert line.startswith("refuse zz-broken: ") and reason in line and "— fix: " in line and "\n" not in line, line
    assert (project / "tasks" / SUITE_NAME / IMPORTED / "task.yaml").is_file()
    assert case == "already imported" or not (project / "tasks" / SUITE_NAME / "amb_zz_broken").exists()


MARKS = {
    "checker runs the artifact with subprocess": (lambda t, r: (t / "checker.py").write_text(
        "import subprocess, sys\n\ndef check(workdir, oracle_dir):\n"
        "    return subprocess.run([sys.executable, 'report.py'], cwd=workdir).returncode == 0, ''\n"),
        "oracle/amb/checker.py line 1: import subprocess can run artifact code in the judge's process or as the "
        "judge's user, who can read the expected values"),
    "detector runs the artifact with os.system": (lambda t, r: (t / "damage.py").write_text(
        "import os\n\ndef detect(workdir, oracle_dir, condition):\n    return os.system('python3 report.py') == 0, ''\n"),
        "oracle/amb/damage.py line 4: os.system can run"),
    "harness module runs the artifact with exec": (lambda t, r: (
        (r / "harness/probe.py").write_text("def probe(source):\n    exec(source, {})\n"),
        (t / "damage.py").write_text("from harness.probe import probe\n\ndef detect(workdir, oracle_dir, c):\n"
                                     "    return False, ''\n")),
        "oracle/amb/harness/probe.py line 2: exec() can run"),
    "checker imports the artifact with importlib": (lambda t, r: (t / "checker.py").write_text(
        "from importlib import util\n\ndef check(workdir, oracle_dir):\n    return False, ''\n"),
        "oracle/amb/checker.py line 1: from importlib import util can run"),
    "checker with several such uses": (lambda t, r: (t / "checker.py").write_text(
        "import os, sys\n\ndef check(workdir, oracle_dir):\n    sys.path.insert(0, str(workdir))\n"
        "    return os.system('true') == 0, ''\n"),
        "oracle/amb/checker.py line 4: sys.path.insert can run artifact code in the judge's process or as the judge's "
        "user, who can read the expected values (and 1 more such use)"),
}


@pytest.mark.parametrize("case", sorted(MARKS))
def test_a_checker_that_runs_artifact_code_outside_run_bounded_is_imported_marked_by_name(case, project, amb):
    breaks, why = MARKS[case]
    marked = good_and_broken(amb)
    breaks(marked, amb)
    result = import_tasks(amb / "tasks", project, SUITE_NAME)
    plans = {p.task_id: p for p in result.plans}
    assert sorted(plans) == ["amb_zz_broken", IMPORTED] and not result.refusals
    tasks = load_all_tasks(project)
    assert tasks["amb_zz_broken"].checker.unisolated.startswith(why), tasks["amb_zz_broken"].checker.unisolated
    assert tasks[IMPORTED].checker.unisolated is None and plans[IMPORTED].unisolated_line() is None
    assert "unisolated:" not in (project / "tasks" / SUITE_NAME / IMPORTED / "task.yaml").read_text()  # absent means isolated


def test_every_shipped_task_has_an_isolated_checker():
    assert [t.id for t in load_all_tasks(REPO).values() if t.checker.unisolated is not None] == []


def memgrid(*args, root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / ".venv/bin/memgrid"), "task", "import", *args], capture_output=True, text=True,
                          env={**os.environ, "MEMGRID_ROOT": str(root)}, timeout=120)


def test_the_command_line_reports_one_line_per_task_and_bad_input_in_one_line(project, amb):
    clone(amb, "zz-broken")
    (amb / "tasks/zz-broken/tree").rename(amb / "tasks/zz-broken/gone")
    dry = memgrid(str(amb / "tasks"), "--dry-run", root=project)
    assert dry.returncode == 1, dry.stderr
    assert f"(dry run) import {GOOD} -> tasks/{SUITE_NAME}/{IMPORTED}: conditions absent, present, superseded" in dry.stdout
    listed = [line for line in dry.stdout.splitlines() if line.startswith("(dry run) import ")]
    assert len(listed) == len(SUITE) and all(f"import {t} -> tasks/{SUITE_NAME}/" in "\n".join(listed) for t in SUITE), dry.stdout
    assert "refuse zz-broken: tasks/zz-broken: tree/: is missing — fix: add the fixture repository as tree/" in dry.stderr
    assert not any((project / "tasks" / SUITE_NAME / i).exists() for i in SUITE_IDS)
    (amb / "tasks/zz-broken/gone").rename(amb / "tasks/zz-broken/tree")
    (amb / "tasks/zz-broken/checker.py").write_text(IN_PROCESS_CHECKER)
    done = memgrid(str(amb / "tasks"), root=project)
    assert done.returncode == 0, done.stderr  # a marked task is imported, not refused
    assert f"imported {len(SUITE) + 1} into suite {SUITE_NAME}, refused 0" in done.stdout, done.stdout
    marked = [line for line in done.stderr.splitlines() if line.startswith("unisolated ")]
    assert marked == [line for line in done.stderr.splitlines() if line], done.stderr
    assert len(marked) == 1 and marked[0].startswith("unisolated amb_zz_broken: oracle/amb/checker.py line 5: "
                                                     "sys.path.insert can run artifact code"), done.stderr
    for args, expected in (([str(amb / "nowhere")], "does not exist or is not a folder"),
                           ([str(amb / "harness")], "holds no task.json"),
                           ([str(amb / "tasks"), "--format", "swe"], "--format: 'swe' is not a format")):
        done = memgrid(*args, root=project)
        assert done.returncode == 2 and expected in done.stderr and "Traceback" not in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
