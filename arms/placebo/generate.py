"""Write the placebo bundle: for each task, a CLAUDE.md of project-shaped prose with no memory
content, matched line for line to the claude_md arm's file in whitespace-separated tokens.

It removes "any extra context helps" as an explanation for the claude_md baseline. Run it after
a claude_md file changes:  .venv/bin/python arms/placebo/generate.py
"""

import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CLAUDE_MD = HERE.parent / "claude_md" / "tasks"

# Generic remarks any repository could carry: nothing about a convention, a decision or a fact.
SENTENCES = [
    "This document collects general notes about the repository and how people work in it.",
    "The code base grew over several releases and parts of it still show their age.",
    "Contributors come from a few different teams and review each other's changes.",
    "Most files are short and each one tries to do a single thing well.",
    "Readable code is valued over clever code, and names should say what things are.",
    "Questions about the design are welcome in the review thread of a change.",
    "Some older modules have fewer comments than newer ones and that is fine.",
    "When something is unclear, reading the surrounding code usually helps.",
    "The history of the project is visible in the version control log.",
    "People tend to prefer small pull requests that are easy to read in one sitting.",
    "There is no strict rule about the order of functions inside a module.",
    "Reviewers look at clarity first and then at everything else.",
    "The repository is maintained on a best effort basis by its regular contributors.",
    "Documentation lives close to the code it describes whenever that is practical.",
    "Occasionally a module is rewritten when it has become hard to follow.",
    "The team meets now and then to talk about the roadmap in broad terms.",
    "Work is tracked in the usual places and nothing here depends on that.",
    "Long discussions are summarised in the description of the change that follows them.",
    "Different editors and terminals are used and none of them is required.",
    "New contributors usually start by reading the tests and a few modules.",
]
WORDS = ("the project files notes code people change module review team work repository "
         "general usual time parts small older newer way place thing each some").split()


def filler(rng: random.Random, n: int) -> str:
    """n whitespace tokens of plain prose, ending with a period when it is a sentence's end."""
    tokens: list[str] = []
    while len(tokens) < n:
        tokens += rng.choice(SENTENCES).split()
    tokens = tokens[:n]
    if n and not tokens[-1].endswith("."):
        tokens[-1] = tokens[-1].rstrip(",") + ("." if n > 3 else "")
    return " ".join(tokens)


def placebo_line(rng: random.Random, line: str) -> str:
    """Keep the line's shape (indent, heading or bullet marker, token count); replace its words."""
    stripped = line.lstrip()
    if not stripped:
        return line
    indent = line[: len(line) - len(stripped)]
    tokens = stripped.split()
    if tokens[0] in {"#", "##", "###", "-", "*", "```"} or tokens[0].rstrip(".").isdigit():
        head, rest = tokens[0], len(tokens) - 1
        if head == "```":
            return indent + "```" + (" " + " ".join(rng.choice(WORDS) for _ in range(rest)) if rest else "")
        words = [rng.choice(WORDS) for _ in range(rest)] if head.startswith("#") else filler(rng, rest).split()
        return indent + " ".join([head, *words])
    return indent + filler(rng, len(tokens))


def placebo_for(task_id: str, claude_md: str) -> str:
    rng = random.Random(f"memgrid-placebo:{task_id}")
    lines = [placebo_line(rng, line) for line in claude_md.split("\n")]
    return "\n".join(lines)


def main() -> int:
    for source in sorted(CLAUDE_MD.glob("*/CLAUDE.md")):
        target = HERE / "tasks" / source.parent.name / "CLAUDE.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(placebo_for(source.parent.name, source.read_text()))
        print(f"wrote {target.relative_to(HERE.parent.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
