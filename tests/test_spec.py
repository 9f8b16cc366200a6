"""Bad specs: one line naming the file, the field and the fix; exit 2; no traceback."""

import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import REPO
from runner.errors import SpecError
from runner.plan.spec import load_arm, load_grid, load_task

GOOD_GRID = "name: g\ntasks: all\narms: [bare]\nagents: [floor]\nseeds: 1\nconditions: [present]\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, field, fix", [
    (GOOD_GRID.replace("seeds: 1", "seeds: two"), "seeds", "whole number"),
    (GOOD_GRID.replace("agents: [floor]", "agents: [Robot!]"), "agents[0]", "floor, ceiling"),
    (GOOD_GRID.replace("name: g\n", ""), "(top level)", "add the field 'name'"),
    (GOOD_GRID + "colour: red\n", "colour", "allowed fields"),
    (GOOD_GRID.replace("arms: [bare]", "arms: [bare"), "line", "fix the YAML syntax"),
    (GOOD_GRID + "judges: [scripted]\n", "judges", "only with protocol: personal"),
    (GOOD_GRID + "cases: 3\n", "cases", "remove it"),
    ("name: p\nprotocol: personal\ncases: 2\narms: [bare]\nagents: [reader]\nseeds: 1\nconditions: [Daily!]\n",
     "conditions[0]", "weekly, monthly, quarterly, or the conditions the grid's suite hosts"),
    # YAML 1.1 reads unquoted on/off as booleans: the fix says to quote them
    ("name: p\nprotocol: planted\ntasks: all\narms: [recall]\nagents: [reader]\nseeds: 1\nconditions: [off, on]\n",
     "is read as", 'quote it, e.g. conditions: ["off", "on"]'),
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


ENTRY = "entry: {file: records/__init__.py, function: make_id}"


@pytest.mark.parametrize("entry, field, says", [
    ("entry: {file: records/missing.py, function: make_id}", "entry.file",
     "records/missing.py is not a file of fixture/ — fix: name the Python file the checker imports"),
    ("entry: {file: ../oracle/check.py, function: main}", "entry.file",
     "../oracle/check.py is not a file of fixture/ — fix: name the Python file the checker imports"),
    ("entry: {file: /etc/passwd.py, function: main}", "entry.file", "names '/etc/passwd.py', which leads to .*outside"),
    ("entry: {file: records/__init__, function: make_id}", "entry.file", "'records/__init__' does not match"),
    ("entry: {file: records/__init__.py, function: make_slug}", "entry.function",
     "'make_slug' is not a top-level function of fixture/records/__init__.py — fix: name the function the checker "
     "calls; fixture/records/__init__.py defines: make_id"),
    ("entry: {file: records/__init__.py}", "entry", "is missing a required field — fix: add the field 'function'"),
])
def test_a_bad_entry_names_file_field_and_fix(project, entry, field, says):
    task_yaml = project / "tasks" / "slug_ids" / "task.yaml"
    assert ENTRY in task_yaml.read_text()
    task_yaml.write_text(task_yaml.read_text().replace(ENTRY, entry))
    with pytest.raises(SpecError) as e:
        load_task(task_yaml.parent)
    assert "\n" not in str(e.value) and e.value.field == field, str(e.value)
    assert re.search(f"task.yaml: {re.escape(field)}: {says}", str(e.value)), str(e.value)


def test_an_entry_the_naive_reference_drops_is_named(project):
    naive = project / "tasks" / "slug_ids" / "references" / "naive" / "records" / "__init__.py"
    naive.write_text(naive.read_text().replace("def make_id(", "def make_key("))
    with pytest.raises(SpecError, match=r"entry\.function: 'make_id' is not a top-level function of "
                                        r"references/naive/records/__init__\.py — fix: "):
        load_task(naive.parents[3])


def test_an_entry_is_optional(project):
    task_yaml = project / "tasks" / "slug_ids" / "task.yaml"
    task_yaml.write_text(task_yaml.read_text().replace(ENTRY + "\n", ""))
    assert load_task(task_yaml.parent).entry is None


def test_arm_kind_files_needs_files(tmp_path):
    write(tmp_path / "x_arm" / "arm.yaml", "name: x_arm\nkind: files\ndescription: d\n")
    with pytest.raises(SpecError, match="add the field 'files'"):
        load_arm(tmp_path / "x_arm")


def test_arm_appendix_is_capped(tmp_path):
    write(tmp_path / "x_arm" / "arm.yaml", f"name: x_arm\nkind: none\ndescription: d\ninstructions: '{'a' * 1201}'\n")
    with pytest.raises(SpecError, match="instructions: .*1,200"):
        load_arm(tmp_path / "x_arm")


def test_the_shared_embedder_and_its_placeholder_go_together(tmp_path):
    """embedder: shared must point the product at the sidecar; {embedder_url} without it would name nothing; a
    misspelt value is refused by the schema with its fix."""
    arm = (REPO / "arms" / "mcp_memory_service_shared" / "arm.yaml").read_text()
    cases = [(arm.replace(', "{embedder_url}"]', ']'), r"mcp\.command: never passes \{embedder_url\}.* fix: pass"),
             (arm.replace("embedder: shared\n", ""), r"mcp\.command: passes \{embedder_url\} but no shared embedder .* fix: add"),
             (arm.replace("embedder: shared", "embedder: own"), r"embedder: .*fix: write 'embedder: shared'")]
    for text, message in cases:
        write(tmp_path / "mcp_memory_service_shared" / "arm.yaml", text)
        with pytest.raises(SpecError, match=message):
            load_arm(tmp_path / "mcp_memory_service_shared")


def test_image_of_must_name_an_arm_that_builds_an_image():
    from runner.plan.spec import image_arm, load_all_arms

    arms = load_all_arms(REPO)
    assert image_arm(arms["mcp_memory_service_shared"], arms).name == "mcp_memory_service"
    with pytest.raises(SpecError, match=r"image_of: names 'bare', which is not an arm that builds an image"):
        image_arm(replace(arms["mcp_memory_service_shared"], image_of="bare"), arms)


MCP_ARM = """name: x_arm
kind: mcp
description: d
search_tool: mcp__xs__search
ingest: {command: [x-ingest]}
mcp:
  server: xs
  command: [x-server]
  search_tool: search
  required_tools: [search]
"""
WRITE = '  write: {tool: store, arguments: {content: "{text}"}, id: id}\n'


@pytest.mark.parametrize("extra, field, fix", [
    ("  write_tools: [store]\n", "mcp.write", "add mcp.write"),
    (WRITE.replace('"{text}"', "hello"), "mcp.write.arguments", 'put "{text}" where the tool takes the content'),
    (WRITE.replace('"{text}"', "[{note: x}]"), "mcp.write.arguments", 'put "{text}"'),
    (WRITE.replace(", id: id", ""), "mcp.write", "give one: id"),
    (WRITE.replace("id: id", "id: id, id_pattern: '(?P<id>x)'"), "mcp.write", "give one: id"),
    (WRITE.replace("id: id", "id_pattern: '(?P<id>x'"), "mcp.write.id_pattern", "Python regex"),
    (WRITE.replace("id: id", "id_pattern: 'hash: ([0-9a-f]+)'"), "mcp.write.id_pattern", "(?P<id>...)"),
    (WRITE + "  write_tools: [forget]\n", "mcp.write.tool", "add 'store' to mcp.write_tools"),
    (WRITE.replace("tool: store, ", ""), "mcp.write", "add the field 'tool'"),
    (WRITE.replace("id: id", "id: id, colour: red"), "mcp.write.colour", "allowed fields"),
    (WRITE.replace("id: id", "id: entities..name"), "mcp.write.id", "dotted path"),
])
def test_a_bad_mcp_write_names_file_field_and_fix(tmp_path, extra, field, fix):
    path = write(tmp_path / "x_arm" / "arm.yaml", MCP_ARM + extra)
    with pytest.raises(SpecError) as e:
        load_arm(tmp_path / "x_arm")
    message = str(e.value)
    assert str(path) in message and f": {field}: " in message and fix in message, message
    assert "\n" not in message


def test_an_mcp_write_fills_the_text_at_any_depth_and_names_its_tool_a_write_tool(tmp_path):
    write(tmp_path / "x_arm" / "arm.yaml", MCP_ARM + '  write: {tool: add, arguments: {items: [{name: "{text}", '
          'notes: ["said: {text}"]}], room: r}, id: items.0.name}\n')
    mcp = load_arm(tmp_path / "x_arm").mcp
    assert mcp.write_tools == ("add",)  # what a writing session must be offered, unless write_tools says more
    assert mcp.write.call("a = 1") == {"items": [{"name": "a = 1", "notes": ["said: a = 1"]}], "room": "r"}
    assert mcp.write.arguments["items"][0]["name"] == "{text}"  # the template itself is left as declared


@pytest.mark.parametrize("run_id", ["../escape", "a/b", ".hidden", "/"])
def test_run_id_must_be_a_plain_folder_name(run_id):
    from runner.errors import UserError
    from runner.env.images import ImageRef, ImageSet
    from runner.exec.run import plan_run
    from runner.plan.spec import GridSpec

    ref = ImageRef("x", "x:1", "sha256:0")
    grid = GridSpec(name="g", tasks=("slug_ids",), arms=("bare",), agents=("floor",), seeds=1, conditions=("present",))
    with pytest.raises(UserError, match="not a plain folder name"):
        plan_run(grid, "grid.yaml", {}, {}, ImageSet(ref, ref, ref), Path("/tmp/runs"), run_id)


# ---------------------------------------------------------------- YAML that is not plain data, names on the command line

REPO = Path(__file__).resolve().parent.parent


def documented_live_grid() -> str:
    """The grid fields docs/agents.md's 'The real agent' section shows for a live model, as written there."""
    section = (REPO / "docs" / "agents.md").read_text().split("## The real agent", 1)[1]
    return section.split("```yaml\n", 1)[1].split("```", 1)[0]


def test_the_docs_live_model_example_is_accepted_with_its_date_as_text(tmp_path):
    text = documented_live_grid()
    assert "as_of: 2026-11-01" in text  # unquoted: YAML would read a date
    grid = load_grid(write(tmp_path / "live.yaml", GOOD_GRID.replace("agents: [floor]\n", "") + text))
    (prices,) = grid.prices.values()
    assert prices["as_of"] == "2026-11-01" and grid.agents == ("claude-code",)


def test_an_impossible_date_is_one_line(tmp_path):
    text = documented_live_grid().replace("as_of: 2026-11-01", "as_of: 2026-13-01")
    with pytest.raises(SpecError, match=r"prices\.claude-sonnet-4-5\.as_of: '2026-13-01' is not a 'date' — fix: "):
        load_grid(write(tmp_path / "live.yaml", GOOD_GRID.replace("agents: [floor]\n", "") + text))


def test_corpus_dates_may_be_written_without_quotes(tmp_path):
    from runner.corpus.build import load_settings

    text = (REPO / "corpus" / "corpus.yaml").read_text().replace('"2023-01-02"', "2023-01-02")
    assert "start: 2023-01-02" in text
    write(tmp_path / "corpus" / "corpus.yaml", text)
    assert load_settings(tmp_path).start.isoformat() == "2023-01-02"


@pytest.mark.parametrize("text, says", [
    (GOOD_GRID + "name: h\n", "line 7: repeats the key 'name' (first on line 1) — fix: keep one of them"),
    (GOOD_GRID + "prices: {m: {input: 1, input: 2}}\n", "line 7: repeats the key 'input' (first on line 7)"),
    (GOOD_GRID + "x: !!python/object/apply:os.system ['true']\n", "line 7: has the YAML tag tag:yaml.org,2002:python/object/apply"),
    ("a: &a [x, x]\nb: [*a, *a]\n", "line 1: defines the YAML anchor &a"),
    (GOOD_GRID + "3: three\n", "line 7: has the key 3, which is not text"),
    (GOOD_GRID + "x: " + "[" * 40 + "]" * 40 + "\n", "line 7: nests lists or mappings deeper than 32 levels"),
    (GOOD_GRID + "---\n" + GOOD_GRID, "holds a second YAML document"),
    ("", "(top level): is empty"),
    ("- a\n", "(top level): is a list, not a mapping of fields"),
])
def test_yaml_beyond_plain_data_is_refused_with_the_line(tmp_path, text, says):
    path = write(tmp_path / "grid.yaml", text)
    with pytest.raises(SpecError) as e:
        load_grid(path)
    assert str(e.value).startswith(f"{path}: ") and says in str(e.value) and "\n" not in str(e.value)


def test_an_alias_bomb_is_refused_before_it_expands(tmp_path):
    """Nine levels of nine aliases: 9**9 strings if anything walked it; refused from the event stream."""
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 10)]
    path = write(tmp_path / "grid.yaml", GOOD_GRID + "\n".join(lines) + "\n")
    with pytest.raises(SpecError, match=r"line 7: defines the YAML anchor &l0"):
        load_grid(path)


def test_unreadable_and_oversized_files_are_one_line(tmp_path):
    from runner.plan.spec import MAX_SPEC_BYTES

    with pytest.raises(SpecError, match=r": \(file\): is a folder, not a file"):
        load_grid(tmp_path)
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * (MAX_SPEC_BYTES + 1))
    with pytest.raises(SpecError, match=r"big\.yaml: \(file\): is larger than 4 MiB"):
        load_grid(big)
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(bytes(range(256)))
    with pytest.raises(SpecError, match=r"binary\.yaml: \(file\): is not UTF-8 text \(byte 128 is 0x80\)"):
        load_grid(binary)


def test_a_nested_reference_hint_is_found_not_a_key_error(project):
    """plants.schema.json reaches its file lists through $ref; the hint walk follows it."""
    plants = project / "tasks" / "slug_ids" / "plants.yaml"
    plants.write_text(plants.read_text().replace("fact: [corpus/fact.jsonl]", "fact: [7]"))
    with pytest.raises(SpecError, match=r"roles\.fact\[0\]: 7 is not of type 'string' — fix: list transcripts as corpus/"):
        load_task(project / "tasks" / "slug_ids")


def test_a_preregistered_grid_naming_an_unknown_arm_names_grid_arms(tmp_path):
    from runner.plan.prereg import check_sizing, load_prereg

    text = (REPO / "preregistration" / "001-default-reader.md").read_text()
    path = write(tmp_path / "001-ghost.md", text.replace("  arms: [bare, ", "  arms: [ghost, bare, ", 1))
    with pytest.raises(SpecError, match=r"001-ghost\.md: grid\.arms: names unknown arm 'ghost' — fix: use one of: bare, "):
        check_sizing(load_prereg(path), REPO)


def memgrid_in_process(monkeypatch, capsys, project: Path, cwd: Path, *args: str) -> tuple[int, list[str]]:
    """`memgrid ARGS` through the console script's entry point, in this process, with the engine out of reach."""
    import docker

    from runner.cli import main

    def no_engine(*a, **k):
        raise AssertionError("the command reached for the Docker engine before refusing its input")

    monkeypatch.setattr(docker, "from_env", no_engine)
    monkeypatch.setenv("MEMGRID_ROOT", str(project))
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "argv", ["memgrid", *args])
    with pytest.raises(SystemExit) as e:
        main()
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return e.value.code, (out + err).strip().splitlines()


@pytest.mark.parametrize("edit, flags, says", [
    (("arms: [bare]", "arms: [ghost]"), (), "grid.yaml: arms: names unknown arm 'ghost' — fix: use one of: bare, claude_md, "),
    (("tasks: all", "tasks: [ghost]"), (), "grid.yaml: tasks: names unknown task 'ghost' — fix: use one of: api_version_header, "),
    (("agents: [floor]", "agents: [ghost]"), (), "grid.yaml: agents: names unknown agent 'ghost' — fix: use one of: "),
    (("conditions: [present]", "conditions: [ghost]"), (), "grid.yaml: conditions[0]: 'ghost' is not one of"),
    (None, ("--arms", "bare,ghost"), "(command line): --arms: names unknown arm 'ghost' — fix: use one of: bare, "),
    (None, ("--tasks", "ghost"), "(command line): --tasks: names unknown task 'ghost' — fix: use one of: "),
    (None, ("--agent", "ghost"), "(command line): --agent: names unknown agent 'ghost' — fix: use one of: "),
    (None, ("--conditions", "present,ghost"), "(command line): --conditions: 'ghost' is not one of ['absent', "),
], ids=["arm", "task", "agent", "condition", "--arms", "--tasks", "--agent", "--conditions"])
def test_unknown_names_in_the_spec_or_the_options_are_one_line_before_the_engine(tmp_path, monkeypatch, capsys,
                                                                                  edit, flags, says):
    text = GOOD_GRID.replace(*edit) if edit else GOOD_GRID
    spec = write(tmp_path / "grid.yaml", text)
    code, lines = memgrid_in_process(monkeypatch, capsys, REPO, tmp_path, "grid", "--spec", str(spec), *flags,
                                     "--no-progress")
    assert code == 2 and len(lines) == 1, lines
    assert says in lines[0], lines[0]
    assert sorted(tmp_path.iterdir()) == [spec]


def test_a_malformed_arm_yaml_is_one_line_for_arm_check(project, monkeypatch, capsys):
    arm = project / "arms" / "recall" / "arm.yaml"
    before = arm.read_text().splitlines()
    arm.write_text(arm.read_text() + "kind: files\n")
    code, lines = memgrid_in_process(monkeypatch, capsys, project, project, "arm", "check", "recall")
    assert code == 2 and len(lines) == 1, lines
    first = before.index("kind: mcp") + 1
    assert lines[0] == (f"memgrid: {arm}: line {len(before) + 1}: repeats the key 'kind' (first on line {first}) — "
                        "fix: keep one of them")


def test_a_malformed_pin_or_digests_file_is_one_line(tmp_path, monkeypatch):
    """pin.yaml and corpus/digests.yaml go through the same reader as every spec: no traceback."""
    from runner.agents import claude_code
    from runner.corpus.build import check, load_settings
    from runner.errors import SpecError

    (tmp_path / "pin.yaml").write_text("package: x\nversion: [1]\n")
    monkeypatch.setattr(claude_code, "CONTEXT", tmp_path)
    with pytest.raises(SpecError, match="pin.yaml"):
        claude_code.load_pin()
    settings = load_settings(REPO)
    bad = tmp_path / "digests.yaml"
    bad.write_text("generator_digest: a\ngenerator_digest: b\n")
    monkeypatch.setattr(type(settings), "digests_path", property(lambda self: bad))
    with pytest.raises(SpecError, match="digests.yaml"):
        check(settings, [])
