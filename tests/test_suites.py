"""Task suites: importing tasks into a suite of their own changes no byte of memgrid's own suite's corpus and no
cell id of its grids; containment is audited within a suite; the import keeps what the source wrote (escapes, a
byte-order mark, a prompt that states its own fact term) and reports it. Each isolation test has a control that
does what the suites prevent and shows the same check failing."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from runner.corpus.build import check as check_corpus, load_settings
from runner.errors import SpecError, UserError
from runner.exec.run import arm_digest, plan_run
from runner.plan.spec import (DEFAULT_SUITE, load_all_arms, load_all_tasks, load_grid, load_suite_tasks, load_suites,
                              other_suites_tasks, preset_path)
from runner.tasks.check import containment_findings, source_notes
from runner.sources.amb import import_tasks

from conftest import REPO

AMB = REPO / "tests" / "data" / "amb"
GOOD = "zz-size-report"
IMPORTED = "amb_zz_size_report"


@pytest.fixture
def amb(tmp_path) -> Path:
    root = tmp_path / "amb"
    shutil.copytree(AMB, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture
def checkout(project) -> Path:
    """The project copy with memgrid's committed corpus settings (at full scale) and digests, so a rebuild can be
    compared with them."""
    for name in ("corpus.yaml", "digests.yaml"):
        shutil.copy(REPO / "corpus" / name, project / "corpus" / name)
    return project


def memgrid(*args, root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / ".venv/bin/memgrid"), *args], env={**os.environ, "MEMGRID_ROOT": str(root)},
                          cwd=root, capture_output=True, text=True, timeout=300)


def default_cells(root: Path, images, runs: Path) -> dict[str, str]:
    """The default grid's cell ids (with the committed corpus digests), by coordinates."""
    grid_path = preset_path("default")
    committed = yaml.safe_load((REPO / "corpus" / "digests.yaml").read_text())["digests"]
    corpora = {(c, int(s)): d for c, by_seed in committed.items() for s, d in by_seed.items()}
    plan = plan_run(load_grid(grid_path), grid_path, load_suite_tasks(root), load_all_arms(root), images, runs,
                    "pytest-suites", corpora)
    return {f"{c.task}/{c.arm}/{c.condition}/{c.seed}/{c.agent}": c.cell_id for c in plan.cells}


def test_importing_a_suite_changes_no_byte_of_memgrids_corpus_and_no_cell_id(checkout, amb, images, tmp_path):
    settings = load_settings(checkout)
    before_cells = default_cells(checkout, images, tmp_path / "runs")
    before_arms = {a: arm_digest(spec, load_all_arms(checkout)) for a, spec in load_all_arms(checkout).items()}

    result = import_tasks(amb / "tasks", checkout, "amb")
    assert result.plans and not result.refusals
    assert (checkout / "tasks/amb/suite.yaml").is_file() and (checkout / "corpus/suites/amb/corpus.yaml").is_file()
    # the import wrote claude_md's and placebo's files for its tasks into the arms' folders
    assert (checkout / "arms/claude_md/tasks" / IMPORTED / "CLAUDE.md").is_file()

    assert set(load_suite_tasks(checkout)) == set(load_suite_tasks(REPO))  # memgrid's suite has the same twelve
    assert check_corpus(settings, list(load_suite_tasks(checkout).values()), ("present", "superseded"), (0,),
                        log=lambda m: None) == []  # rebuilt byte for byte as committed
    assert default_cells(checkout, images, tmp_path / "runs") == before_cells
    foreign = other_suites_tasks(checkout, DEFAULT_SUITE)
    assert {a: arm_digest(spec, load_all_arms(checkout), foreign) for a, spec in load_all_arms(checkout).items()} == before_arms

    # control: the same tasks in memgrid's own suite (what `task import` did before suites) move its benchmark
    shutil.copytree(checkout / "tasks/amb" / IMPORTED, checkout / "tasks" / "zz_in_memgrid_suite")
    (checkout / "tasks/zz_in_memgrid_suite/task.yaml").write_text(
        (checkout / "tasks/zz_in_memgrid_suite/task.yaml").read_text().replace(f"id: {IMPORTED}", "id: zz_in_memgrid_suite"))
    changed = check_corpus(settings, list(load_suite_tasks(checkout).values()), ("present",), (0,), log=lambda m: None)
    assert changed and changed[0].startswith("generator digest changed"), changed
    # ...and an arm's digest that kept another suite's per-task files would move every claude_md cell id
    assert arm_digest(load_all_arms(checkout)["claude_md"], load_all_arms(checkout)) != before_arms["claude_md"]


def test_a_suites_corpus_is_generated_from_its_own_tasks_alone(checkout, amb):
    import_tasks(amb / "tasks" / GOOD, checkout, "amb")
    done = memgrid("corpus", "build", "--suite", "amb", "--conditions", "present", "--seeds", "0", root=checkout)
    assert done.returncode == 0, done.stderr
    meta = json.loads((checkout / "corpus/suites/amb/build/present/seed-0/meta.json").read_text())
    key = json.loads((checkout / "corpus/suites/amb/build/present/seed-0/key.json").read_text())
    assert {e["task"] for e in key.values()} == set(load_suite_tasks(checkout, "amb"))
    assert meta["planted"] == len(key) and meta["haystack"] == 4900
    assert not (checkout / "corpus" / "build").exists()  # memgrid's own corpus folder untouched
    verify = memgrid("corpus", "verify", "--suite", "amb", root=checkout)
    assert verify.returncode == 0 and "ok" in verify.stdout, verify.stdout + verify.stderr


def test_containment_is_audited_within_a_suite(checkout, amb):
    """A fact term of memgrid's suite in the imported task's fixture is not a finding: the two never share a corpus.
    Audited over both suites together (as before suites), the same files are a finding."""
    slug_term = load_suite_tasks(checkout)["slug_ids"].fact_terms[0]
    readme = amb / "tasks" / GOOD / "tree" / "README.md"
    readme.write_text(readme.read_text() + f"\nSee also: {slug_term}.\n")
    import_tasks(amb / "tasks" / GOOD, checkout, "amb")
    arms = list(load_all_arms(checkout).values())
    within = containment_findings(list(load_suite_tasks(checkout).values()), arms)
    assert not [f for f in within if not f.passed], [f for f in within if not f.passed]
    across = containment_findings(list(load_all_tasks(checkout).values()), arms)
    assert any(f.task == "slug_ids" and not f.passed and "README.md" in f.detail for f in across)


def test_task_ids_are_unique_across_suites_and_memgrids_suite_is_never_imported_into(checkout, amb):
    import_tasks(amb / "tasks" / GOOD, checkout, "amb")
    again = import_tasks(amb / "tasks" / GOOD, checkout, "amb_again")
    assert not again.plans and "is task 'amb_zz_size_report' of suite 'amb'" in again.refusals[0].reason
    with pytest.raises(UserError, match="memgrid's own suite, which an import never changes"):
        import_tasks(amb / "tasks" / GOOD, checkout, DEFAULT_SUITE)
    with pytest.raises(UserError, match="is a folder but not a suite"):
        import_tasks(amb / "tasks" / GOOD, checkout, "slug_ids")
    shutil.copytree(checkout / "tasks" / "slug_ids", checkout / "tasks" / "amb" / "slug_ids")
    with pytest.raises(SpecError) as e:
        load_suites(checkout)
    assert "'slug_ids' is also a task of suite 'memgrid'" in str(e.value)


def test_a_grid_names_its_suite_and_a_wrong_one_is_one_line(checkout, amb, tmp_path):
    import_tasks(amb / "tasks" / GOOD, checkout, "amb")
    spec = tmp_path / "grid.yaml"
    spec.write_text(yaml.safe_dump({"name": "s", "suite": "nope", "tasks": "all", "arms": ["bare"], "agents": ["floor"],
                                    "seeds": 1, "conditions": ["present"]}))
    done = memgrid("grid", "--spec", str(spec), "--runs-dir", str(tmp_path / "runs"), root=checkout)
    assert done.returncode == 2 and done.stderr.strip() == (
        f"memgrid: {spec}: suite: names unknown suite 'nope' — fix: use one of: memgrid, amb; a published benchmark's "
        "suite exists once imported: memgrid task import --format FORMAT PATH (memgrid task import --help names each "
        "format and its source)"), done.stderr
    flag = memgrid("grid", "--suite", "nope", "--estimate", root=checkout)
    assert flag.returncode == 2 and flag.stderr.startswith("memgrid: (command line): --suite: names unknown suite 'nope'")
    # a task of another suite is not this grid's
    other = memgrid("grid", "--suite", "amb", "--tasks", "slug_ids", "--estimate", root=checkout)
    assert other.returncode == 2 and "names unknown task 'slug_ids'" in other.stderr and IMPORTED in other.stderr
    listed = memgrid("task", "list", root=checkout)
    assert listed.returncode == 0 and "amb" in listed.stdout and "slug_ids" in listed.stdout


RECORDED_LINE = {"role": "user", "content": "Also: the report file uses \\r\\n line endings, and starts with "
                                            "\ufeffsize: as its first bytes.", "ts": "2026-08-05T09:05:00Z"}


def test_fact_terms_are_matched_as_the_source_wrote_them(checkout, amb):
    """A term with an escaped line ending and one with a byte-order mark are found in the transcript that states them,
    though the file on disk holds them JSON-escaped; a recorded session whose file starts with a BOM imports."""
    terms = ["\\r\\n line endings", "\ufeffsize:"]
    meta = amb / "tasks" / GOOD / "task.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "fact_terms":
                                json.loads(meta.read_text())["fact_terms"] + terms}))
    session = amb / "corpus/sessions" / GOOD / "p01.jsonl"
    session.write_bytes(b"\xef\xbb\xbf" + session.read_bytes() + (json.dumps(RECORDED_LINE) + "\n").encode())
    result = import_tasks(amb / "tasks" / GOOD, checkout, "amb")
    assert result.plans and not result.refusals, [r.line() for r in result.refusals]
    task = load_all_tasks(checkout)[IMPORTED]
    assert set(terms) <= set(task.fact_terms)
    raw = (task.root / "corpus" / "fact_p01.jsonl").read_text()
    assert terms[0] not in raw  # the control: on disk the line ending's escape is escaped again
    findings = {f.rule: f for f in containment_findings([task], list(load_all_arms(checkout).values()))}
    for t in terms:
        assert findings[f"fact term '{t}' in its fact transcripts"].passed
    mapping = json.loads((task.root / "provenance.json").read_text())["mapped"]["terms"]["fact_terms"]
    assert {m["source"]: m["in_transcripts"] for m in mapping}[json.dumps(terms[0])] == ["corpus/fact_p01.jsonl"]


def test_a_source_prompt_that_states_its_own_fact_term_is_imported_and_reported_not_fixed(checkout, amb):
    meta = amb / "tasks" / GOOD / "task.json"
    data = json.loads(meta.read_text())
    term = data["fact_terms"][1]  # floor to whole KiB
    meta.write_text(json.dumps({**data, "prompt": data["prompt"] + f" Remember to {term}."}))
    import_tasks(amb / "tasks" / GOOD, checkout, "amb")
    task = load_all_tasks(checkout)[IMPORTED]
    assert term in task.prompt  # kept as the source wrote it
    assert json.loads((task.root / "provenance.json").read_text())["source_properties"] == {"prompt_states_terms": [term]}
    assert source_notes(task) and term in source_notes(task)[0]
    findings = containment_findings([task], list(load_all_arms(checkout).values()))
    assert all(f.passed for f in findings), [f for f in findings if not f.passed]
    done = memgrid("task", "check", "--suite", "amb", "--static", root=checkout)
    assert done.returncode == 0 and f"NOTE {IMPORTED}: its prompt states its own fact term(s) '{term}'" in done.stderr, done.stderr
    # control: a task written here whose prompt states its fact term is a failure, not a note
    (task.root / "provenance.json").unlink()
    findings = containment_findings([load_all_tasks(checkout)[IMPORTED]], list(load_all_arms(checkout).values()))
    assert any(f.rule == "fact terms appear nowhere else" and not f.passed and "(prompt)" in f.file for f in findings)
