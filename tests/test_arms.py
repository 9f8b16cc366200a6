"""The shipped arms: placebo matches claude_md in shape and carries nothing of it."""

import importlib.util

import pytest

from conftest import REPO

CLAUDE = REPO / "arms" / "claude_md" / "tasks"
PLACEBO = REPO / "arms" / "placebo" / "tasks"
TASKS = sorted(p.parent.name for p in CLAUDE.glob("*/CLAUDE.md"))


def generator():
    spec = importlib.util.spec_from_file_location("placebo_generate", REPO / "arms" / "placebo" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_task_has_both_files():
    assert TASKS and sorted(p.parent.name for p in PLACEBO.glob("*/CLAUDE.md")) == TASKS


@pytest.mark.parametrize("task", TASKS)
def test_placebo_matches_claude_md_line_for_line_in_whitespace_tokens(task):
    claude = (CLAUDE / task / "CLAUDE.md").read_text().split("\n")
    placebo = (PLACEBO / task / "CLAUDE.md").read_text().split("\n")
    assert len(placebo) == len(claude)
    assert [len(l.split()) for l in placebo] == [len(l.split()) for l in claude]


@pytest.mark.parametrize("task", TASKS)
def test_placebo_shares_no_content_words_with_claude_md(task):
    def words(text):
        return {w.strip("`.,:;()'\"").lower() for w in text.split() if len(w.strip("`.,:;()'\"")) > 5}

    shared = words((CLAUDE / task / "CLAUDE.md").read_text()) & words((PLACEBO / task / "CLAUDE.md").read_text())
    assert len(shared) <= 8, f"the placebo repeats the claude_md file's words: {sorted(shared)}"


def test_committed_placebo_is_what_the_generator_writes():
    gen = generator()
    for task in TASKS:
        assert gen.placebo_for(task, (CLAUDE / task / "CLAUDE.md").read_text()) == (PLACEBO / task / "CLAUDE.md").read_text(), \
            f"arms/placebo/tasks/{task}/CLAUDE.md is stale: run .venv/bin/python arms/placebo/generate.py"

