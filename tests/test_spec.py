"""Bad specs: one line naming the file, the field and the fix; exit 2; no traceback."""

import subprocess
import sys
from pathlib import Path

import pytest

from runner.errors import SpecError
from runner.spec import load_arm, load_grid, load_task

GOOD_GRID = "name: g\ntasks: all\narms: [bare]\nagents: [floor]\nseeds: 1\nconditions: [present]\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, field, fix", [
    (GOOD_GRID.replace("seeds: 1", "seeds: two"), "seeds", "whole number"),
    (GOOD_GRID.replace("agents: [floor]", "agents: [robot]"), "agents[0]", "floor, ceiling"),
    (GOOD_GRID.replace("name: g\n", ""), "(top level)", "add the field 'name'"),
    (GOOD_GRID + "colour: red\n", "colour", "allowed fields"),
    (GOOD_GRID.replace("arms: [bare]", "arms: [bare"), "line", "fix the YAML syntax"),
])
def test_bad_grid_names_file_field_and_fix(tmp_path, text, field, fix):
    path = write(tmp_path / "grid.yaml", text)
    with pytest.raises(SpecError) as e:
        load_grid(path)
    message = str(e.value)
    assert str(path) in message and field in message and fix in message
    assert "\n" not in message


def test_good_grid_loads(tmp_path):
    grid = load_grid(write(tmp_path / "grid.yaml", GOOD_GRID))
    assert grid.arms == ("bare",) and grid.seeds == 1 and grid.tasks == "all"


def test_cli_prints_one_line_and_exits_2(tmp_path):
    path = write(tmp_path / "grid.yaml", GOOD_GRID.replace("seeds: 1", "seeds: -3"))
    proc = subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "grid", "--spec", str(path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "grid.yaml: seeds:" in lines[0] and "fix:" in lines[0]
    assert "Traceback" not in proc.stderr + proc.stdout


def test_task_id_must_match_folder(project):
    task_yaml = project / "tasks" / "slug_ids" / "task.yaml"
    task_yaml.write_text(task_yaml.read_text().replace("id: slug_ids", "id: other_name"))
    with pytest.raises(SpecError, match=r"task\.yaml: id: .*folder"):
        load_task(task_yaml.parent)


def test_task_missing_references_is_named(project):
    import shutil

    shutil.rmtree(project / "tasks" / "slug_ids" / "references" / "informed")
    with pytest.raises(SpecError, match="references/informed"):
        load_task(project / "tasks" / "slug_ids")


def test_task_checker_command_must_be_a_list(project):
    task_yaml = project / "tasks" / "slug_ids" / "task.yaml"
    text = task_yaml.read_text()
    start = text.index("  command:")
    end = text.index("\n", start)
    task_yaml.write_text(text[:start] + "  command: python3 /oracle/check.py" + text[end:])
    with pytest.raises(SpecError, match=r"checker\.command: .* fix: give the command as a list"):
        load_task(task_yaml.parent)


def test_arm_kind_files_needs_files(tmp_path):
    write(tmp_path / "x_arm" / "arm.yaml", "name: x_arm\nkind: files\ndescription: d\n")
    with pytest.raises(SpecError, match="add the field 'files'"):
        load_arm(tmp_path / "x_arm")


def test_arm_appendix_is_capped(tmp_path):
    write(tmp_path / "x_arm" / "arm.yaml", f"name: x_arm\nkind: none\ndescription: d\ninstructions: '{'a' * 1201}'\n")
    with pytest.raises(SpecError, match="instructions: .*1,200"):
        load_arm(tmp_path / "x_arm")


@pytest.mark.parametrize("run_id", ["../escape", "a/b", ".hidden", "/"])
def test_run_id_must_be_a_plain_folder_name(run_id):
    from runner.errors import UserError
    from runner.images import ImageRef, ImageSet
    from runner.run import plan_run
    from runner.spec import GridSpec

    ref = ImageRef("x", "x:1", "sha256:0")
    grid = GridSpec(name="g", tasks=("slug_ids",), arms=("bare",), agents=("floor",), seeds=1, conditions=("present",))
    with pytest.raises(UserError, match="not a plain folder name"):
        plan_run(grid, "grid.yaml", {}, {}, ImageSet(ref, ref, ref), Path("/tmp/runs"), run_id)
