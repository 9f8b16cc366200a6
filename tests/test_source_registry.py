"""The command line and the data folders' schemas say what the source registry holds (issue 68, step 4): a format
added to sources/registry.FORMATS shows in `memgrid task import --help` and `memgrid export --help` without an edit
of cli.py, its import options are flags of `task import`, and the schemas researchers read name it."""

import json
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import typer.main
import yaml

from runner import cli
from runner.errors import SpecError
from runner.exec.job import check_agents
from runner.plan.spec import load_all_arms, load_grid
from runner.sources import locomo, memora, smriti, traptask
from runner.sources.registry import FORMATS, SOLUTIONS, exporting

from conftest import REPO
from smriti_fixture import write_smriti


def command(*path: str):
    group = typer.main.get_command(cli.app)
    for name in path:
        group = group.commands[name]
    return group


def test_task_import_takes_every_formats_options_and_names_every_format():
    params = {p.opts[0]: p for p in command("task", "import").params if p.opts}
    options = {option: cls for cls in FORMATS.values() for option in cls.options}
    assert set(cli.IMPORT_OPTIONS) == set(options), "a format's option has no flag (or a flag no format takes)"
    for option, flag in cli.IMPORT_OPTIONS.items():
        assert flag in params and params[flag].help.startswith(f"{options[option].name}: "), flag
    for name, cls in FORMATS.items():
        assert f"{name} (a {cls.protocol} suite)" in params["--format"].help
    assert all(f"for {name}, " in command("task", "import").params[0].help for name in FORMATS)


def test_export_names_exactly_the_formats_that_export():
    help_text = next(p.help for p in command("export").params if p.opts and p.opts[0] == "--format")
    assert exporting() == ["memora", "smriti", "locomo"]
    for name in FORMATS:
        assert (f"{name} (" in help_text) == (name in exporting()), name


def test_the_schemas_name_every_hosted_format_and_its_solution_key():
    suite = json.loads((REPO / "runner" / "schemas" / "suite.schema.json").read_text())
    grid = json.loads((REPO / "runner" / "schemas" / "grid.schema.json").read_text())
    protocol_help = suite["properties"]["protocol"]["description"]
    suite_help = grid["properties"]["suite"]["description"]
    for name, cls in FORMATS.items():
        if cls.protocol != "coding":  # a coding suite is memgrid's own shape: its protocol is the default
            assert f"--format {name}" in protocol_help and f"--format {name}" in suite_help, name
    command_agent = grid["properties"]["command_agents"]["additionalProperties"]["properties"]
    assert set(SOLUTIONS) <= set(command_agent), "a format's solution key is not in the grid schema"


def imported(name: str, tmp_path) -> tuple[Path, str]:
    """A project holding only one format's fixture, imported as its own suite: (project root, suite)."""
    root = tmp_path / "project"
    (root / "tasks").mkdir(parents=True)
    if name == "memora":
        memora.import_memora(REPO / "tests" / "data" / "memora", root, "memora", log=lambda m: None)
        return root, "memora"
    if name == "locomo":
        locomo.import_locomo(REPO / "tests" / "data" / "locomo", root, "locomo", log=lambda m: None)
        return root, "locomo"
    if name == "smriti":
        smriti.import_smriti(write_smriti(tmp_path / "chitta"), root, "smriti", log=lambda m: None)
        return root, "smriti"
    task = tmp_path / "src" / "pair_recall"
    shutil.copytree(REPO / "tests" / "data" / "traptask" / "pair_recall", task,
                    ignore=shutil.ignore_patterns("__pycache__", "inputs", "expected"))
    subprocess.run([sys.executable, "-B", "build_cases.py"], cwd=task, check=True, capture_output=True, timeout=60)
    traptask.import_task(task, root, "pair_recall", log=lambda m: None)
    return root, "pair_recall"


@pytest.mark.parametrize("name", ["memora", "locomo", "smriti", "traptask"])
def test_the_grid_an_import_prints_passes_every_check_before_the_engine(name, tmp_path, monkeypatch):
    """What `memgrid task import` prints as the grid that runs the suite is a grid memgrid accepts: its protocol,
    agents, arms, conditions and units all check (exec.job.check_agents, Protocol.units), and it runs every unit."""
    root, suite = imported(name, tmp_path)
    monkeypatch.setenv("MEMGRID_ROOT", str(root))
    spec = FORMATS[name]().grid_example(root / "tasks" / suite, suite)
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(spec))
    grid = load_grid(path)
    protocol, _ = check_agents(grid, path, root, load_all_arms(REPO))
    units = protocol.units(grid, {}, path)
    assert sorted(units) == sorted(u for u, _ in FORMATS[name]().hosted_units(root / "tasks" / suite))


@pytest.mark.parametrize("name, conditions, message", [
    (None, ["weekly", "daily"], "names 'daily', which is not a condition memgrid's generated persons have — fix: use "
                                "weekly, monthly, quarterly"),
    ("memora", ["weekly", "quarterly"], "names 'quarterly', which is not a condition suite 'memora' hosts — fix: use "
                                        "monthly, weekly"),
    ("locomo", ["weekly"], "names 'weekly', which is not a condition suite 'locomo' hosts — fix: use published"),
])
def test_a_personal_condition_no_person_has_is_refused_before_the_engine(name, conditions, message, tmp_path,
                                                                        monkeypatch):
    """A condition no person is held in would plan no cell of it and pass every check (issue 70's quarterly)."""
    if name is None:
        root, spec = REPO, {"name": "g", "protocol": "personal", "cases": 1, "arms": ["bare"], "agents": ["reader"],
                            "seeds": 1}
    else:
        root, suite = imported(name, tmp_path)
        spec = FORMATS[name]().grid_example(root / "tasks" / suite, suite)
    monkeypatch.setenv("MEMGRID_ROOT", str(root))
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump({**spec, "conditions": conditions}))
    with pytest.raises(SpecError, match=re.escape(f"conditions: {message}")):
        check_agents(load_grid(path), path, root, load_all_arms(REPO))


def test_no_grid_is_printed_for_a_trap_task_whose_case_states_no_answer(tmp_path, monkeypatch, capsys):
    """It can say none: a trap task with a case that states no answer gets no reader grid (only a command agent of
    the user's plays it), rather than one the grid check would refuse."""
    root, suite = imported("traptask", tmp_path)
    cases = traptask.hosted_case_list(root / "tasks" / suite)
    assert all(c.reference for c in cases.values())
    first = next(iter(cases.values()))
    monkeypatch.setattr(traptask, "hosted_case_list", lambda folder: {**cases, first.id: replace(first, reference=None)})
    assert traptask.TrapTaskFormat().grid_example(root / "tasks" / suite, suite) is None
    # the import still ends with a next step: what to write, and the check that reads it
    from runner.cli import print_next_run

    monkeypatch.setenv("MEMGRID_ROOT", str(root))
    print_next_run(traptask.TrapTaskFormat(), suite)
    said = capsys.readouterr().out
    assert said.startswith(f"next: write a grid spec with protocol: two-session and suite: {suite} ") and \
        "memgrid grid --spec grid.yaml --check" in said, said
    print_next_run(traptask.TrapTaskFormat(), suite, said_next=True)  # a format that said its own next step
    assert "next:" not in capsys.readouterr().out
