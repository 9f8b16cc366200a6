"""What a newcomer meets at the command line before any run: `--help` that shows what each option takes, and a
damaged run folder named in one line. A damaged run.json is a reviewer's first sight of a run they were sent: every
command that reads a run folder says which file is wrong and how to fix it, never a traceback (report printed 45
lines on invalid JSON and `KeyError: 'grid'` on `{}`); the commands that do not need the lock still work."""

import json
import sys

import pytest

from conftest import REPO
from runner.results.run_lock import load_lock
from synthetic_ledger import cell, write_run

DAMAGES = {"invalid JSON": '{"run_id": "r", "grid": {', "an empty object": "{}", "a list": "[]",
           "grid not an object": json.dumps({"run_id": "r", "grid": "coding", "inputs": {}})}
SAYS = {"invalid JSON": "not JSON (Expecting property name enclosed in double quotes at line 1)",
        "an empty object": "field run_id: missing", "a list": "a JSON list, not a run's lock (an object)",
        "grid not an object": "field grid: not an object"}


def memgrid(argv: list[str], monkeypatch, capsys) -> tuple[int, str, str]:
    """The console script's entry point in this process: exit code, stdout, stderr."""
    from runner.cli import main

    monkeypatch.setattr(sys, "argv", ["memgrid", *argv])
    monkeypatch.chdir(REPO)
    code = 0
    try:
        main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def damaged(tmp_path):
    runs = {name: write_run(tmp_path / "runs" / f"r{i}", [cell("t0", "bare", True), cell("t0", "recall", False)])
            for i, name in enumerate(DAMAGES)}
    for name, run in runs.items():
        (run / "run.json").write_text(DAMAGES[name])
    return runs, write_run(tmp_path / "runs" / "sound", [cell("t0", "bare", True), cell("t0", "recall", False)])


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_every_command_that_reads_the_lock_says_which_file_in_one_line(damage, damaged, tmp_path, monkeypatch, capsys):
    runs, sound = damaged
    run = runs[damage]
    lock = run / "run.json"
    for argv in (["report", str(run)], ["view", str(run), "--out", str(tmp_path / "site")],
                 ["export", str(run), "--format", "memora", "--output", str(tmp_path / "export")],
                 ["compare", str(run), str(sound)], ["compare", str(sound), str(run)],
                 ["reproduce", "preregistration/001-default-reader.md", "--run", str(run)]):
        code, out, err = memgrid(argv, monkeypatch, capsys)
        lines = [line for line in (out + err).splitlines() if line.strip()]
        assert code == 2 and len(lines) == 1, (argv, out + err)
        assert lines[0] == f"memgrid: {lock}: {SAYS[damage]}: fix: restore run.json from where the run folder came " \
                           "from (the machine or archive that has it): it is the run's record of its inputs, which " \
                           "memgrid cannot rebuild", (argv, lines[0])
    # the ledger's commands do not read the lock: a damaged one does not stop them
    for argv in (["cells", str(run)], ["cell", "show", str(run), "reader-t0-bare"]):
        code, out, err = memgrid(argv, monkeypatch, capsys)
        assert code == 0 and "Traceback" not in out + err and "t0" in out, (argv, out + err)


def test_a_sound_lock_is_read_and_a_missing_one_named(damaged, tmp_path):
    _, sound = damaged
    assert load_lock(sound)["run_id"] == "sound"
    with pytest.raises(Exception, match=r"run\.json: missing: fix: give a run id under runs/"):
        load_lock(tmp_path)


def test_help_shows_what_each_option_takes_and_no_type_for_a_flag(monkeypatch, capsys):
    """Rich help printed every flag as `<bool>` (`--serve <bool>`, `--help <bool>`), as if it took a value."""
    code, out, _ = memgrid(["view", "--help"], monkeypatch, capsys)
    options = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.strip().startswith("--")}
    assert code == 0 and options["--port"][0] == "<int" and options["--out"][0] == "<path>", out
    assert options["--serve"][0] == "Then" and options["--help"][0] == "Show", out
    assert "<bool>" not in out


def test_grid_check_prints_the_runs_shape_without_an_engine(monkeypatch, capsys):
    """`--check` runs every engine-free check a run makes and prints its cells and images; nothing reaches an engine
    (DOCKER_HOST points at a closed port: a connect would fail the command)."""
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")
    code, out, err = memgrid(["grid", "--check"], monkeypatch, capsys)
    assert code == 0, out + err
    assert out.splitlines() == [
        f"{REPO}/runner/defaults/default.yaml: checked, nothing run: 420 cells = 60 unit x condition pairs x 7 arm x "
        "agent pairs x 1 seed(s)",
        "images it needs (each built by the first run that lacks it, reused after): memgrid-base, memgrid-sandbox, memgrid-checker, "
        "memgrid-arm-recall"]
    # a model agent's images: its CLI's layer and the gateway's sidecars
    code, out, err = memgrid(["grid", "--check", "--agent", "claude-code", "--model", "scripted"], monkeypatch, capsys)
    assert code == 0 and out.splitlines()[-1].endswith("memgrid-arm-recall, memgrid-claude-code, memgrid-model"), out + err
    # a problem a run would meet is its usual one line
    code, out, err = memgrid(["grid", "--check", "--arms", "bare,nosuch"], monkeypatch, capsys)
    assert code == 2 and err.startswith("memgrid: (command line): --arms: names unknown arm 'nosuch'"), out + err


def test_grid_check_names_each_condition_and_arm_that_would_get_no_cell(monkeypatch, capsys):
    """Checks that could pass silently: a condition no unit is run under, an arm no agent plays (the protocol's own
    pairs and plays decide both; here they are made to leave 'absent' and 'placebo' without a cell)."""
    from runner.protocols.registry import PROTOCOLS

    coding = PROTOCOLS["coding"]
    pairs = coding.pairs
    monkeypatch.setattr(coding, "pairs", lambda grid, units, tasks: [p for p in pairs(grid, units, tasks) if p[1] != "absent"])
    monkeypatch.setattr(coding, "plays", lambda arm, agent: arm.name != "placebo")
    code, out, err = memgrid(["grid", "--check", "--conditions", "absent,present", "--arms", "bare,placebo"],
                             monkeypatch, capsys)
    grid = f"{REPO}/runner/defaults/default.yaml"
    assert code == 2 and "12 cells = 12 unit x condition pairs x 1 arm x agent pairs" in out, out + err
    assert err.splitlines() == [
        f"memgrid: {grid}: conditions: 'absent' gets no cell: no unit of the grid is run under it — fix: drop it (its "
        "units are run under: present)",
        f"memgrid: {grid}: arms: 'placebo' gets no cell: no agent of the grid plays it in the coding protocol — fix: "
        "drop it, or add an agent that plays it"]


def test_grid_check_names_a_task_that_would_get_no_cell(monkeypatch, capsys):
    from runner.protocols.registry import PROTOCOLS

    coding = PROTOCOLS["coding"]
    pairs = coding.pairs
    monkeypatch.setattr(coding, "pairs", lambda grid, units, tasks: [p for p in pairs(grid, units, tasks) if p[0] != "slug_ids"])
    code, out, err = memgrid(["grid", "--check", "--tasks", "slug_ids,api_version_header", "--conditions", "present"],
                             monkeypatch, capsys)
    assert code == 2 and err.splitlines() == [
        f"memgrid: {REPO}/runner/defaults/default.yaml: tasks: 'slug_ids' gets no cell: none of the grid's conditions is "
        "one of its own — fix: drop it, or add one of its conditions (memgrid task list shows them)"], out + err


def test_doctor_passes_the_default_grid_whatever_only_other_grids_lack(engine, project, tmp_path, monkeypatch):
    """doctor exited 1 on a machine where the default grid runs, for product images only other grids need. An image
    a grid lacks is built by its first run; what stops the default grid (no engine, a full disk) still fails."""
    import shutil

    from runner.env import doctor

    shutil.copytree(project / "arms" / "recall", project / "arms" / "never_built")
    arm = project / "arms" / "never_built" / "arm.yaml"
    arm.write_text(arm.read_text().replace("name: recall", "name: never_built", 1))
    from runner.exec.check import check_spec
    from runner.plan.spec import load_grid, preset_path

    default = set(check_spec(load_grid(preset_path("default")), preset_path("default"), project).images)
    checks = {c.name: c for c in doctor.run_checks(tmp_path, project, default)}
    unbuilt = checks["image arm never_built"]
    assert (unbuilt.ok, unbuilt.blocking, unbuilt.status, unbuilt.needed_by, unbuilt.detail) == \
        (False, False, "not built", "grids with arm never_built", "memgrid-arm-never_built")  # no tag it may never get
    assert checks["image arm recall"].needed_by == "the default grid" and checks["engine"].ok
    assert doctor.default_grid_runs(list(checks.values()))
    monkeypatch.setattr(doctor, "MIN_FREE_GB", 10**9)  # no host has that much: a full disk stops every grid
    short = doctor.run_checks(tmp_path, project, default)
    assert not doctor.default_grid_runs(short) and any(c.status == "missing" for c in short)
