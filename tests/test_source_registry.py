"""The command line and the data folders' schemas say what the source registry holds (issue 68, step 4): a format
added to sources/registry.FORMATS shows in `memgrid task import --help` and `memgrid export --help` without an edit
of cli.py, its import options are flags of `task import`, and the schemas researchers read name it."""

import json

import typer.main

from runner import cli
from runner.sources.registry import FORMATS, SOLUTIONS, exporting

from conftest import REPO


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
    assert exporting() == ["memora", "smriti"]
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
