"""The source-format seam: what every format of a benchmark hosted as published has in common.

A format (`SourceFormat`, one module per format beside this one, listed in `registry.py`) imports a
source folder into a suite of its own under tasks/<suite>/ and reports each unit it imported or
refused in one line (`ImportResult`). A source is someone else's checkout: every file is read
through `Source.inside`, so a link cannot make an import copy (or run) a file of this machine, and
where it came from is read from its .git without running git (`Source.origin`).
"""

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import yaml

from runner.digest import sha256_bytes
from runner.errors import SpecError, UserError
from runner.plan.spec import DEFAULT_SUITE
from runner.results.reward import RewardMapping
from runner.units.personal import AnswerJudgePrompt, AnswerPrompt, Question, Unit
from runner.units.planted import PlantedTask
from runner.units.two_session import HostedCase, JudgeRequest

SUITE_NAME = re.compile(r"^[a-z][a-z0-9_]{1,47}$")


class Refused(Exception):
    """What cannot be imported faithfully: the file, the field, what is wrong, the fix."""

    def __init__(self, file: str, field: str, problem: str, fix: str):
        self.file, self.field, self.problem, self.fix = file, field, problem, fix
        super().__init__(f"{file}: {field}: {problem} — fix: {fix}")


@dataclass(frozen=True)
class Refusal:
    source: Path
    reason: str

    def line(self) -> str:
        return f"refuse {self.source.name}: {self.reason}"


@dataclass
class ImportResult:
    """`plans`: what was (or, on a dry run, would be) imported, each with `line()` and `unisolated_line()`."""
    plans: list = field(default_factory=list)
    refusals: list[Refusal] = field(default_factory=list)
    created: list[str] = field(default_factory=list)  # the suite's own files, written when the suite was new


@dataclass
class ExportResult:
    """What `memgrid export` wrote: its files, the cells left out and why, and what to run next."""
    written: list[Path] = field(default_factory=list)
    records: int = 0  # the cells written: a file each (Memora's reports), or lines of a file per agent x arm (SMRITI)
    skipped: dict[str, str] = field(default_factory=dict)  # cell id -> why it is not in the benchmark's records
    next: str = ""


@dataclass(frozen=True)
class Source:
    """A checkout of someone else's: the folder an import reads its files from."""
    root: Path
    kind: str  # how the checkout is named in a refusal: "amb", "trap task"

    def rel(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def inside(self, path: Path, field: str = "(file)") -> Path:
        """`path`, refused unless it stays inside the checkout with every link followed: a checkout is someone
        else's, and a linked folder, a file named '../../..' or a .git/HEAD naming a ref out of it would make the
        import copy (or run) a file of this machine."""
        try:
            real = path.resolve()
        except (OSError, RuntimeError) as e:  # RuntimeError: a link loop
            raise Refused(self.rel(path), field, f"cannot be resolved ({e})", "replace the link with a copy") from None
        if not real.is_relative_to(self.root.resolve()):
            raise Refused(self.rel(path), field, f"leads to {real}, outside the {self.kind} checkout {self.root}",
                          "keep every file of the task inside the checkout: copy it in instead of linking to it")
        return path

    def origin(self, fallback: str, git_root: Path | None = None) -> dict:
        """The checkout's origin and commit, read from `git_root`/.git (default: the root's) without running git;
        the commit is None when it is not a checkout."""
        git = (git_root or self.root) / ".git"
        commit = url = None
        head = git / "HEAD"
        if self.inside(head).is_file():
            ref = head.read_text().strip()
            if ref.startswith("ref: "):
                ref_file = self.inside(git / ref[5:], "ref")
                commit = ref_file.read_text().strip() if ref_file.is_file() else None
            else:
                commit = ref
        config = self.inside(git / "config")
        if config.is_file():
            found = re.search(r'\[remote "origin"\][^\[]*?url\s*=\s*(\S+)', config.read_text())
            url = found.group(1) if found else None
        return {"repository": url or fallback, "commit": commit}


def last_json(output: str) -> dict | None:
    """The JSON object a benchmark's judge or grader prints as its last non-empty line; None when it printed none."""
    lines = [line for line in output.splitlines() if line.strip()]
    try:
        value = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def hosted_files(root: Path, recorded: dict[str, str], present: set[str], what: str, fix: str) -> dict[str, bytes]:
    """Every file of a hosted suite (paths under `root`) as imported: each `recorded` sha256 matched by a regular file
    `present`, nothing missing or added, each refused by name (`what`: how the source is named in the message)."""
    files = {}
    for rel in sorted(present | set(recorded)):
        p = root / rel
        data = p.read_bytes() if rel in recorded and rel in present and not p.is_symlink() else None
        if rel not in recorded:
            problem = f"is not a file of {what} as imported"
        elif rel not in present:
            problem = "is missing"
        elif data is None or sha256_bytes(data) != recorded[rel]:
            problem = f"differs from {what} as imported (its sha256 is in provenance.json)"
        else:
            files[rel] = data
            continue
        raise SpecError(p, "(file)", problem, fix)
    return files


def write_hosted_suite(staging: Path, header: str, doc: dict, provenance: dict, indent: int = 1) -> None:
    """A hosted suite's suite.yaml (`header`, comment lines, then `doc`) and provenance.json, into `staging`."""
    staging.mkdir(parents=True, exist_ok=True)
    (staging / "suite.yaml").write_text(header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100))
    (staging / "provenance.json").write_text(json.dumps(provenance, indent=indent) + "\n")


def new_suite_folder(project: Path, suite: str, what: str) -> Path:
    """tasks/<suite>/ for a hosted import (`what`: how its source is named), refused when it exists: an import never
    writes into a suite it did not make."""
    into = suite_folder(project, suite)
    if into.exists():
        raise UserError(f"tasks/{suite}: already exists — fix: choose another --suite, or remove tasks/{suite}/ to "
                        f"import {what} again")
    return into


def read_provenance(path: Path, fields: dict[str, type], what: str, fmt: str) -> dict:
    """A hosted suite's provenance.json, each of `fields` of its kind, or one SpecError naming the fix."""
    try:
        provenance = json.loads(path.read_text())
        for name, kind in fields.items():
            kind(provenance[name])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SpecError(path, "files", f"cannot be read ({e})",
                        f"import {what} again (memgrid task import --format {fmt})") from None
    return provenance


def suite_folder(project: Path, suite: str) -> Path:
    """tasks/<suite>/, checked: never memgrid's own suite, never a task's folder."""
    if suite == DEFAULT_SUITE:
        raise UserError(f"--suite: '{suite}' is memgrid's own suite, which an import never changes — fix: name another, e.g. --suite amb")
    if not SUITE_NAME.match(suite):
        raise UserError(f"--suite: '{suite}' is not a suite name — fix: use lower case letters, digits and _ (2-48), e.g. amb")
    folder = project / "tasks" / suite
    if (folder / "task.yaml").exists() or (folder.is_dir() and not (folder / "suite.yaml").is_file()):
        raise UserError(f"tasks/{suite}: is a folder but not a suite (no suite.yaml) — fix: choose another --suite")
    return folder


class SourceFormat:
    """One published benchmark's layout: how `memgrid task import --format NAME PATH` hosts it."""
    name: ClassVar[str]
    protocol: ClassVar[str]  # the protocol its suites run in (their suite.yaml's protocol)
    about: ClassVar[str]  # one line for --help: what PATH is
    # The import options it takes (keyword arguments of import_source), each with its --help: the CLI's text for
    # `memgrid task import` comes from here (cli.IMPORT_OPTIONS names each option's flag).
    options: ClassVar[dict[str, str]] = {}
    # What `memgrid export --format NAME` writes and which of the benchmark's own tools reads it; None: no export.
    export_about: ClassVar[str | None] = None
    # How the format reads a hosted suite when a run plans and runs it, as a number that enters each hosted unit's
    # identity beside the unit as read (never the module's bytes, so code can move without re-identifying a run):
    # bump it when a change of the reading changes what a unit means; tests/test_source_identity.py pins each
    # format's fixture units under their version. None: the suite is read only at import (amb writes memgrid's own
    # task shape, whose files are its identity).
    reader_version: ClassVar[int | None] = None

    reward: ClassVar[RewardMapping | None] = None  # the reward its card defines over raw quality (results/reward.py)
    # personal: the published rows a run's report sets beside its own (system -> value per condition, percent) and
    # what they measure, e.g. {"Mem0": (40, 21, 20)}; empty: the benchmark published none memgrid reproduces.
    published: ClassVar[dict[str, tuple[float, ...]]] = {}
    published_about: ClassVar[str] = ""
    published_source: ClassVar[str] = ""  # whose rows: the paper or card they are from
    # personal: the benchmark's own scores (answer_scores) pooled over several question kinds, as it or its readers
    # quote them (column -> the kinds pooled, each question counted once), and what those scores are, said once
    # under their table.
    own_pools: ClassVar[dict[str, tuple[str, ...]]] = {}
    own_about: ClassVar[str] = ""
    # personal: the published prompts that ask a model whether an answer is right against the gold answer, the first
    # the default: asked of the grid's model judges through the OpenAI-compatible endpoint (judge_endpoint: openai),
    # each question with a gold answer (judged_gold) under every prompt; its label is one of the benchmark's own
    # scores. Empty: the format's model judges judge its criteria (Memora's sub-questions).
    answer_judges: ClassVar[tuple[AnswerJudgePrompt, ...]] = ()
    # personal: the benchmark's own prompt for a model answering from the memories a search released (its agent
    # track), asked by the `answerer` agent; None: a model answerer would not be the benchmark's, and is refused.
    answer_prompt: ClassVar[AnswerPrompt | None] = None
    # personal: its own prompt for a model answering from the whole history (an arm of kind corpus, full_context: its
    # model track); None: such an arm is refused beside a model answerer.
    history_prompt: ClassVar[AnswerPrompt | None] = None
    # personal: published figures of one of its own scores (system -> (percent, whose figure it is)), the score and
    # pool they are (e.g. ("J (mem0)", "1-4")), and why they are not memgrid's: set beside each arm's in the report.
    published_own: ClassVar[dict[str, tuple[float, str]]] = {}
    published_own_score: ClassVar[tuple[str, str] | None] = None
    published_own_note: ClassVar[str] = ""

    def reader_identity(self) -> dict:
        """What of the format enters a hosted unit's identity."""
        return {"format": self.name, "reader_version": self.reader_version}

    def default_suite(self, path: Path) -> str:
        """The suite an import writes into when --suite is not given."""
        return self.name

    def import_source(self, path: Path, project: Path, suite: str, *, dry_run: bool = False, **options) -> ImportResult:
        raise NotImplementedError

    def hosted_units(self, folder: Path) -> list[tuple[str, str]]:
        """The units a suite of this format hosts (id, title), for a suite whose protocol is not coding."""
        raise NotImplementedError

    # The hooks a protocol calls on a suite of its format (`folder`: tasks/<suite>/), each checking the suite is the
    # source as imported. A format implements those of its own protocol.

    def unit_conditions(self, folder: Path) -> dict[str, list[str]]:
        """personal: each hosted unit (a person) and the conditions (periods) the suite hosts it in."""
        raise NotImplementedError

    def personal_unit(self, folder: Path, unit_id: str, condition: str) -> Unit:
        """personal: a person over a period, as the personal protocol runs it."""
        raise NotImplementedError

    def unit_files(self, folder: Path, unit_id: str, condition: str) -> dict[str, str]:
        """personal: the files that define a person over a period (path -> sha256 as imported)."""
        raise NotImplementedError

    def answer_scores(self, question: Question, answer: str) -> dict[str, float]:
        """personal: the benchmark's own scores of an answer, kept beside the judges' verdicts (LoCoMo's F1); none
        for a benchmark judged by its criteria alone."""
        return {}

    def evidence_recall(self, question: Question, released: list[str]) -> float | None:
        """personal: the share of a question's evidence the search released (`released`: record ids), by the
        benchmark's own rule where it has one (LoCoMo's); None: it has none, and memgrid's count of the cited
        records stands alone."""
        return None

    def judged_gold(self, question: Question) -> str | None:
        """personal: the gold answer its answer judges compare an answer with; None: the question is not asked."""
        return None

    def planted_tasks(self, folder: Path) -> dict[str, PlantedTask]:
        """planted: the suite's tasks as the planted protocol runs them."""
        raise NotImplementedError

    def planted_split(self, folder: Path) -> tuple[dict[str, str], str]:
        """planted: each task's split and the split's digest."""
        raise NotImplementedError

    def hosted_cases(self, folder: Path) -> dict[str, HostedCase]:
        """The cases of a hosted suite (tasks/<suite>/), by id, checked to be the source as imported."""
        raise NotImplementedError

    def judge_request(self, folder: Path, case_id: str, output: str, exit_code: int) -> JudgeRequest:
        """How the benchmark's own judge scores a case from the last session's output and exit status."""
        raise NotImplementedError

    def grader_request(self, folder: Path, judged: list[dict]) -> JudgeRequest | None:
        """How the benchmark's own grader gives a run's verdict over its judged cases (`judged`: per case its id,
        the judge's verdict or None, seconds, cost); None when it has no grader."""
        return None

    # The key under a grid's command_agents that names a solution folder in the benchmark's own solution format
    # (trap_solution: a trapstreet solution), read by solution_agent; None: the benchmark has none.
    solution_key: ClassVar[str | None] = None

    def solution_agent(self, folder: Path, where: Path, field: str) -> tuple[tuple[str, ...], dict[str, Path]]:
        """A solution folder as a command agent: its command and its files by path relative to the folder."""
        raise NotImplementedError

    def grader_verdict(self, grader_output: str) -> dict | None:
        """The grader's verdict over a run from what it printed (its last JSON line); None when it gave none."""
        return last_json(grader_output)

    def verdict(self, judge_output: str) -> dict | None:
        """The judge's result (with a numeric `score`) from what it printed; None when it gave none."""
        raise NotImplementedError

    def export(self, run_dir: Path, output: Path, log=print) -> ExportResult:
        """A run in the records the benchmark's own tools read (`memgrid export --format NAME RUN`); a format whose
        benchmark has no such tools does not override it."""
        raise NotImplementedError

    def grid_example(self, folder: Path, suite: str) -> dict | None:
        """A grid spec that runs the suite as imported (`folder`: tasks/<suite>/), printed after an import and checked
        by tests/test_source_registry.py; None when none runs it as it stands (closing_lines say what to do)."""
        return None

    def closing_lines(self, result: ImportResult, suite: str, dry_run: bool) -> list[str]:
        """What the import wrote beside the suite and what to do next, printed after its count."""
        return []
