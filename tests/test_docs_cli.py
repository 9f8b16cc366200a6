"""The docs cannot drift from the CLI: every `memgrid` command in a code block of README, docs/, tasks/README.md
and benchmarks/README.md names a subcommand that exists and only flags that command takes (its --help), and calls
memgrid one way, as README's set-up puts it on PATH."""

import re
import shlex
from pathlib import Path

import typer.main

from conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "tasks" / "README.md",
        REPO / "benchmarks" / "README.md"]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
# memgrid as a command: first on the line (after VAR=value assignments) or after &&, ; or |, as memgrid or a path to it
CALL = re.compile(r"(^(\w+=\S+\s+)*|(&&|;|\|)\s*)(\S*/)?memgrid\s+-*[a-z]")


def commands(text: str) -> list[str]:
    """Each command line of the text's code blocks that calls memgrid (continuation lines joined)."""
    found = []
    for block in FENCE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            if CALL.search(line):
                found.append(line)
    return found


def problem(line: str, root) -> str | None:
    """Why the line's memgrid call is not one the CLI takes, or None."""
    try:
        tokens = shlex.split(line, comments=True)
    except ValueError:
        tokens = line.split()
    calls = [i for i, t in enumerate(tokens) if t.rsplit("/", 1)[-1] == "memgrid"]
    if not calls:
        return None
    words = tokens[calls[0] + 1:]
    words = words[:next((i for i, w in enumerate(words) if w in ("|", "&&", ";", ">", "2>&1")), len(words))]
    command, path = root, ["memgrid"]
    while hasattr(command, "commands") and words and not words[0].startswith("-"):
        sub = command.commands.get(words[0])
        if sub is None:
            return f"'{' '.join(path)} {words[0]}' is not a command (it has: {', '.join(sorted(command.commands))})"
        command, path, words = sub, [*path, words[0]], words[1:]
    flags = {o for p in command.params for o in (*p.opts, *p.secondary_opts) if o.startswith("--")} | {"--help"}
    for word in words:
        flag = word.split("=", 1)[0]
        if flag.startswith("--") and flag not in flags:
            return f"'{' '.join(path)}' takes no {flag} (it takes: {', '.join(sorted(flags))})"
    return None


def test_every_memgrid_command_in_the_docs_is_one_the_cli_takes():
    from runner.cli import app

    root = typer.main.get_command(app)
    seen, wrong = 0, []
    for doc in DOCS:
        for line in commands(doc.read_text()):
            seen += 1
            if (why := problem(line, root)) is not None:
                wrong.append(f"{doc.relative_to(REPO)}: {line}\n    {why}")
            elif re.search(r"\S/memgrid\s", line):  # one way to call it, as README's set-up says: memgrid on PATH
                wrong.append(f"{doc.relative_to(REPO)}: {line}\n    calls memgrid by a path: write it as memgrid")
    assert seen > 40, f"only {seen} memgrid commands found in the docs' code blocks: the reader is broken"
    assert not wrong, "\n".join(wrong)


def test_the_reader_finds_a_command_or_flag_the_cli_lacks():
    from runner.cli import app

    root = typer.main.get_command(app)
    assert problem("memgrid grid --spec g.yaml --check", root) is None
    assert "takes no --dry" in problem("memgrid grid --dry", root)
    assert "'memgrid arm frobnicate' is not a command" in problem(".venv/bin/memgrid arm frobnicate x", root)
    assert commands("text\n```bash\n$ memgrid report RUN \\\n  --html x.html\n```\n") == ["memgrid report RUN    --html x.html"]


LINK = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")


def broken_links(doc: Path) -> list[str]:
    """The relative links of a Markdown file that name no file or folder of the checkout."""
    return [target for target in LINK.findall(doc.read_text()) for target in [target[0]]
            if "://" not in target and not (doc.parent / target).exists()]


def test_every_relative_link_of_readme_and_docs_names_a_file_that_exists():
    """README is the front door and its docs index the way in: a page moved or renamed must not leave a dead link."""
    wrong = {str(doc.relative_to(REPO)): links for doc in DOCS if (links := broken_links(doc))}
    assert not wrong, wrong
    index = re.findall(r"\]\((docs/[^)]+\.md)\)", (REPO / "README.md").read_text())
    assert {REPO / page for page in index} >= set((REPO / "docs").glob("*.md")), "a docs page README's index leaves out"


def test_the_link_check_finds_a_dead_link(tmp_path):
    (tmp_path / "there.md").write_text("x")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md) [web](https://example.org/x) [anchor](there.md#part) [dead](docs/gone.md)")
    assert broken_links(page) == ["docs/gone.md"]
