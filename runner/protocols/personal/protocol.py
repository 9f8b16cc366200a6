"""The personal-memory protocol: does the arm remember what a person said, keep up with changes, and let
go of what no longer holds? Scored with Memora's FAMA (metrics.py).

A unit is a person (`p00`..), a condition a horizon (`weekly`, `monthly`, `quarterly`); the corpus and
the answer key come from corpus.py, or, for a grid naming a suite a source format hosts in this protocol, from the
benchmark's files as published, through sources/registry.HostedSuite (e.g. personas, periods, sessions, and yes/no
sub-questions: model judges are asked them as they are, the deterministic judges look for the value each names).
A cell runs three containers and judges outside them, in the process that
runs the cell (the controller, or a dask worker with deterministic judges):
1. build (harness step, the arm's image, no network): the arm's own ingest writes the person's records
   up to the cutoff into its store. Arms without an ingest build nothing.
2. search (the harness's reader, the arm's image and memory): each question goes to the arm's search
   (mcp: its server's search tool, k results; corpus: every record, the full context; oracle: the
   records stating the current facts; none: nothing). The harness keeps up to 350 unique ids per
   question that are this person's records no later than the cutoff; any other id is a recorded
   violation, dropped.
3. answer (the cell's agent, the plain sandbox image, no network, no arm): only the requests, each a
   question with the full text of the records released to it. The gate proves the container holds
   nothing else (`answer_isolated`): no store, no corpus, no arm.
4. judges: each criterion (presence: should mention X; forgetting: should not mention Y) goes to the
   judge panel (judges.py); FAMA per question; the cell's mean in the ledger's `result`.
Only the build's store passes to the search, digested in between; only record ids (and the texts the
harness looks up for them) pass to the answer.
"""

import json
import os
import time
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path

from runner.agents.answerer import REQUESTS as MODEL_REQUESTS
from runner.agents.base import ReferenceChannel, first_ending
from runner.agents.reference import ExtractiveAgent, ReaderAgent
from runner.agents.registry import agent_class
from runner.agents.submission import SubmissionAgent
from runner.arms import store_cache
from runner.arms.ingest import arm_key_inputs, fill, store_receipt
from runner.arms.kinds import STORE_DIR, CellMemory, OracleKind, kind_of
from runner.digest import sha256_bytes, sha256_json
from runner.env.archive import Entry, pack, safe_entries
from runner.env.bundle import Bundle, arm_instructions, bundle_of
from runner.env.images import arm_image_needed
from runner.env.model_endpoint import SCRIPTED, ModelEndpoint, live_api_key
from runner.errors import SpecError, UserError
from runner.exec.trial import (PhaseSpec, TrialContext, agent_config, cell_failure, harness_step, isolation_proof,
                               new_row, now, run_phase, session_fields, wait_for_removals, write_json)
from runner.grading import gate
from runner.plan.grid import CellSpec
from runner.plan.spec import ArmSpec, GridSpec, TaskSpec, provider
from runner.protocols.base import Protocol
from runner.protocols.personal import corpus as gen
from runner.protocols.personal import metrics, openai_judges, submission
from runner.protocols.personal import panel as model_panel
from runner.protocols.personal.judges import OFFLINE_PANEL, judge_criterion, panel_names
from runner.results.ledger import LedgerRow
from runner.sources.registry import HostedSuite, hosted_suite, hosting
from runner.units.personal import (AnswerPrompt, MemoriesPrompt, Question, Record, SubQuestion, Unit, as_messages_request,
                                   unit_digest as data_digest)

SEARCH_K = 10  # what a search-tool arm is asked for per question (the contract allows up to MAX_IDS)
MAX_IDS = 350
SEARCH_SECONDS = 300
ANSWER_SECONDS = 300
INGEST_ROOT = "/sandbox/ingest"
GENERATOR_FILES = ("corpus.py", "judges.py", "metrics.py", "panel.py")
ANSWERER_READER = "reader"  # the harness's own code runs the search; the cell's agent only answers
SEARCH_PROMPT = "Search the arm's memory for each question in .reader/queries.json (the harness's search step)."
ANSWER_PROMPT = ("Answer each question in /sandbox/requests/ using only the records given with it. Print one JSON "
                 'line per question: {"question": "<id>", "answer": "<your answer>"}.\n')
# The answer phase runs with no arm at all: no store, no server, no corpus in its container.
ISOLATED = ArmSpec(name="isolated-answer", kind="none", description="the answer phase: requests only", instructions="",
                   files=(), search_tool=None, mcp=None, ingest=None, ingest_seconds=0, hooks=(), uses=None,
                   required_paths=(), root=Path("."))
ALLOWED_IN_ANSWER = {"agent", "requests", "MANIFEST.sha256"}
# How a model answerer (agents/answerer.py) is asked about memgrid's generated persons, which no benchmark's code asks:
# the records as numbered memories, the instruction to use them alone; greedy sampling, so a rerun asks the same.
DEFAULT_ANSWER_PROMPT = MemoriesPrompt(
    name="memgrid-default",
    system=("You answer questions about a user from what was said in earlier conversations with them, given below as "
            "memories. Use only the memories: where they disagree, the later one holds; if they do not say, answer "
            "that you do not know."),
    user="Question: {question}\n\nMemories:\n{memories}\n\nAnswer the question.",
    memory_line="{n}. {memory}",
    settings=(("max_tokens", 500), ("temperature", 0)),
    source="memgrid (runner/protocols/personal/protocol.py)")


@dataclass(frozen=True)
class PanelSetup:
    """The grid's model judges and where they are asked: the model gateway (its image), or an OpenAI-compatible
    endpoint with the hosted benchmark's own judge prompt (openai_judges.py)."""
    models: tuple[str, ...]
    model_image: object | None  # env.images.ImageRef; None through the OpenAI-compatible endpoint
    guard_image: str | None
    endpoint: str = "messages"
    name: str | None = None  # the published panel the grid named (openai_judges.PRESETS)

    @property
    def scripted(self) -> bool:
        return self.models[0] == SCRIPTED


@dataclass(frozen=True)
class PersonalSetup:
    """What a personal run keeps for its cells (Protocol.prepare): its model judges, if any, and the hosted suite
    its persons come from (None: memgrid's generated persons; its format's card may define a reward)."""
    panel: PanelSetup | None
    hosted: HostedSuite | None = None


CACHE_FILE = "judge-cache.jsonl"  # in the runs folder: shared by a run, its resume and its reproductions


@cache
def generator_digest() -> str:
    here = Path(__file__).resolve().parent
    return sha256_json({name: sha256_bytes((here / name).read_bytes()) for name in GENERATOR_FILES})


@cache
def unit_of(person: str, horizon: str) -> Unit:
    return gen.build_unit(person, horizon)


def unit_digest(unit: Unit) -> str:
    """What defines a person over a horizon: the records, the answer key and the code that made and judges them."""
    return sha256_json({"data": data_digest(unit), "generator": generator_digest()})


def hosted_digest(hosted: HostedSuite, persona: str, period: str, root: Path | None = None) -> str:
    """What defines a hosted persona over a period: its files as imported (each checked now), the persona as the
    format read them (records, questions, evidence) under its reader's version, and the code that judges them."""
    source, folder = hosted.source(), hosted.folder(root)
    unit = source.personal_unit(folder, persona, period)  # refuses a changed, added or missing file by name
    return sha256_json({"files": source.unit_files(folder, persona, period), "reader": generator_digest(),
                        "format": source.reader_identity(), "unit": data_digest(unit)})


class UnitMemory:
    """The person's records as the corpus and oracle kinds take memory (corpus.build.MemorySource's shape):
    every record up to the cutoff as a document, or the records that state the current facts."""

    def __init__(self, unit: Unit):
        self.unit = unit

    def documents(self, condition: str, seed: int) -> list[tuple[str, bytes]]:
        return [(r.id, f"date: {r.date}\n\n{r.text}\n".encode()) for r in self.unit.records]

    def evidence(self, task, condition: str, seed: int) -> str:
        by_id = {r.id: r for r in self.unit.records}
        return "".join(f"## memory {rid} ({by_id[rid].date})\n\n{by_id[rid].text}\n\n" for rid in self.unit.oracle_evidence())


def record_file(record: Record) -> bytes:
    """A record as a session file of the arm's ingest input (the coding corpus's JSONL shape)."""
    base = {"session": record.id, "ts": f"{record.date}T12:00:00Z"}
    return "".join(json.dumps({**base, "role": role, "content": text}, sort_keys=True) + "\n"
                   for role, text in record.turns()).encode()


@dataclass(frozen=True)
class Released:
    """What the harness did with the ids a search returned for one question: the ids the answer may see (this
    person's records up to the cutoff, unique, at most MAX_IDS, in the search's order) and every other id by why it
    was dropped. Another person's (or no record's) id and one past the cutoff are violations of any search;
    a repeat and one past the first MAX_IDS are violations of a submission's (the contract's words), while the
    harness's own reader repeats a record that a product stored in parts and hands a full context whole. Where the
    harness lists an arm's whole memory for every question (`listed`: a full context, an oracle's evidence; no search
    tool chose anything), a record past a question's cutoff is that cutoff at work, not the arm's violation."""
    kept: tuple[str, ...]
    dropped: dict[str, tuple[str, ...]]  # DROP_KINDS -> ids
    contract: bool = False  # the search was a submission's: every drop is a violation
    listed: bool = False  # the ids are the harness's listing of the arm's whole memory, not a search's choice

    @property
    def violations(self) -> list[str]:
        kinds = DROP_KINDS if self.contract else ("not_this_person",) if self.listed else ("not_this_person",
                                                                                          "past_cutoff")
        return [i for k in kinds for i in self.dropped.get(k, ())]


DROP_KINDS = ("not_this_person", "past_cutoff", "duplicate", "over_limit")


def released(unit: Unit, question: Question, ids: list[str], contract: bool = False,
             listed: bool = False) -> Released:
    sessions = {r.id: r.session for r in unit.records}
    kept, seen, dropped = [], set(), {k: [] for k in DROP_KINDS}
    for i in ids:
        kind = ("duplicate" if i in seen else "not_this_person" if i not in sessions else
                "past_cutoff" if sessions[i] > question.cutoff_session else "over_limit" if len(kept) >= MAX_IDS else None)
        seen.add(i)
        (dropped[kind] if kind else kept).append(i)
    return Released(tuple(kept), {k: tuple(v) for k, v in dropped.items() if v}, contract, listed)


def answers_of(transcript) -> dict[str, str]:
    """The answers a session gave: the reader's `answer` events, or JSON lines a command agent printed."""
    found = {e["question"]: str(e.get("answer", "")) for e in transcript.events if e.get("type") == "answer"}
    for line in transcript.output.splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "question" in obj and "answer" in obj:
            found.setdefault(str(obj["question"]), str(obj["answer"]))
    return found


# What the judges read of one answer. Every deterministic judge costs time in the answer's length on the controller,
# per criterion; a command answerer may print up to the capture's 16 MiB. An answer is judged on its first
# JUDGED_CHARS (the question's record says it was cut): the length is the answerer's own doing.
JUDGED_CHARS = 1_000_000


def judged_part(answer: str) -> tuple[str, bool]:
    """The part of an answer the judges read, and whether it was cut."""
    return answer[:JUDGED_CHARS], len(answer) > JUDGED_CHARS


def person_store_key(ctx: TrialContext, arm: ArmSpec, unit: Unit, period: str,
                     docs: tuple[Entry, ...]) -> store_cache.StoreKey:
    """What a person's store is a function of. Its corpus is the records the ingest is given (each file's digest)
    under the person's namespace; no seed enters the build, so every seed shares the store (seed 0)."""
    image = ctx.images_by_arm.get(provider(arm, ctx.arms).name, ctx.images.sandbox)
    records = sha256_json({"namespace": unit.id, "docs": {e.path: sha256_bytes(e.data) for e in docs}})
    inputs = arm_key_inputs(arm, image, ctx.embedder.tag if ctx.embedder is not None else None)
    return store_cache.StoreKey(**inputs, corpus_digest=records, condition=period, seed=0)


def model_judges(setup: PanelSetup, asked, cache: model_panel.JudgeCache, question: str) -> tuple:
    """The panel of one question: each model asked through the gateway (the question in memgrid's prompt) or through
    the OpenAI-compatible endpoint (the hosted benchmark's prompt, which shows the judge only the answer)."""
    if setup.endpoint == "openai":
        return tuple(openai_judges.OpenAIJudge(i, m, asked, cache) for i, m in enumerate(setup.models))
    return tuple(model_panel.ModelJudge(i, m, asked, cache, question) for i, m in enumerate(setup.models))


def answer_labels(labels: list, judges: list) -> dict[str, float]:
    """Per answer prompt, the share of its models' valid labels that say CORRECT (1 or 0 with one model); a prompt
    none of whose models gave a valid label has no score for the question (its invalid labels are counted)."""
    out = {}
    for prompt in dict.fromkeys(j.prompt.name for j in judges):
        valid = [v.mentions for v, j in zip(labels, judges) if j.prompt.name == prompt and v.mentions is not None]
        if valid:
            out[prompt] = sum(valid) / len(valid)
    return out


def gateway_address(endpoint: ModelEndpoint) -> str:
    """The gateway's address on the cell's network, which the controller (on the host) reaches directly."""
    container = endpoint.containers["gateway"]
    container.reload()
    return container.attrs["NetworkSettings"]["Networks"][endpoint.network_name]["IPAddress"]


def release_all(unit: Unit, retrieved: dict[str, list[str]], search_phase: dict,
                contract: bool = False, listed: bool = False, cited_only: bool = False) -> dict[str, Released]:
    """Per question, what is released to the answer; the violations' count goes in the search's phase. `cited_only`:
    an oracle of a unit whose questions each cite their own evidence gives each question, of the records listed,
    exactly those it cites (the others are what that oracle does not return, not drops)."""
    cited = {q.id: set(q.evidence) for q in unit.questions}
    out = {q.id: released(unit, q, [i for i in retrieved.get(q.id, []) if not cited_only or i in cited[q.id]],
                          contract, listed) for q in unit.questions}
    search_phase["violations"] = sum(len(r.violations) for r in out.values())
    return out


@dataclass
class Answers:
    """What a cell's search and answer left: the ledger fields they decide and, when the gate admitted them, each
    question's answer and what was released to it (answers None: the cell ends here, discarded)."""
    row: dict
    answers: dict[str, str] | None = None
    released: dict[str, Released] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)  # a submission's: why an answer does not count
    contract: dict | None = None  # a submission's: how each of its stages ended (the ledger's result keeps it)
    prompt: dict | None = None  # a model answerer's: the answer prompt it was asked with (the ledger's result keeps it)


class PersonalProtocol(Protocol):
    name = "personal"
    runs_submissions = True
    agent_uses_server = False  # the harness's reader searches the arm; the cell's agent answers in isolation
    passed_label = None  # answers are judged per question (summary.json), not passed per cell
    reads = ("arms", "tasks")  # its generated persons are code; a hosted suite's are tasks/<suite>/
    description = ("Personal memory over weeks to quarters (Memora's FAMA): the arm builds a store of a person's "
                   "dated conversations, searches it per question, and an isolated answerer sees only the "
                   "records released; judges check what the answer should and should not mention.")

    def hosted(self, grid: GridSpec, grid_path) -> HostedSuite | None:
        """The grid's hosted suite (a benchmark's persons as published), or None: generated persons."""
        return hosted_suite(grid, grid_path, self.name)

    def hosted_periods(self, hosted: HostedSuite) -> dict[str, list[str]]:
        """The periods each hosted persona has."""
        return hosted.source().unit_conditions(hosted.folder(None))

    def unit_ids(self, grid: GridSpec, tasks: dict[str, TaskSpec], grid_path) -> list[str]:
        hosted = self.hosted(grid, grid_path)
        if hosted is not None:
            personas = sorted(self.hosted_periods(hosted))
            chosen = personas if grid.tasks == "all" else list(grid.tasks)
            for p in chosen:
                if p not in personas:
                    raise SpecError(grid_path, "tasks", f"names '{p}', which is not a persona of suite '{grid.suite}'",
                                    f"use all, or personas of it: {', '.join(personas)}")
            return chosen
        if grid.cases is None:
            raise SpecError(grid_path, "cases", "is missing", "give how many persons to generate, or a hosted suite "
                            f"(suite: one that memgrid task import --format {'|'.join(hosting(self.name))} wrote)")
        if grid.cases > gen.MAX_PERSONS:
            raise SpecError(grid_path, "cases", f"asks for {grid.cases} persons", f"give at most {gen.MAX_PERSONS}")
        return gen.person_ids(grid.cases)

    def units(self, grid: GridSpec, tasks: dict[str, TaskSpec], grid_path) -> dict[str, str]:
        hosted = self.hosted(grid, grid_path)
        if hosted is not None:
            periods = self.hosted_periods(hosted)
            return {p: sha256_json({h: hosted_digest(hosted, p, h) for h in periods[p]})
                    for p in self.unit_ids(grid, tasks, grid_path)}
        return {p: sha256_json({h: unit_digest(unit_of(p, h)) for h in gen.HORIZONS})
                for p in self.unit_ids(grid, tasks, grid_path)}

    def pairs(self, grid: GridSpec, units: list[str], tasks: dict[str, TaskSpec]) -> list[tuple[str, str]]:
        hosted = self.hosted(grid, Path("(grid)"))
        if hosted is not None:  # a persona runs in the periods the suite hosts it in
            periods = self.hosted_periods(hosted)
            return [(u, h) for u in units for h in grid.conditions if h in periods[u]]
        return [(u, h) for u in units for h in grid.conditions]

    def unit(self, ctx: TrialContext, cell: CellSpec) -> Unit:
        setup: PersonalSetup | None = ctx.protocol_setup
        if setup is not None and setup.hosted is not None:
            return setup.hosted.source().personal_unit(setup.hosted.folder(ctx.root), cell.task, cell.condition)
        return unit_of(cell.task, cell.condition)

    def check_conditions(self, grid: GridSpec, grid_path) -> None:
        """Each condition is a horizon of the generated persons, or one the grid's suite hosts a person in: a
        condition no person has would plan no cell of it, silently."""
        hosted = self.hosted(grid, grid_path)
        held = sorted({c for cs in self.hosted_periods(hosted).values() for c in cs}) if hosted else list(gen.HORIZONS)
        for c in grid.conditions:
            if c not in held:
                whose = f"suite '{grid.suite}' hosts" if hosted else "memgrid's generated persons have"
                raise SpecError(grid_path, "conditions", f"names '{c}', which is not a condition {whose}",
                                f"use {', '.join(held)}")

    def check(self, grid: GridSpec, grid_path, arms: dict[str, ArmSpec], agent_classes: dict) -> None:
        super().check(grid, grid_path, arms, agent_classes)
        self.check_conditions(grid, grid_path)
        if self.hosted(grid, grid_path) is not None:
            if grid.cases is not None:
                raise SpecError(grid_path, "cases", f"is set, but suite '{grid.suite}' brings its own persons",
                                "remove cases (name personas in tasks, or all)")
            # The reader answers with a generated person's attribute values; a hosted question names none, so every
            # answer would be "I don't know" and every row 0: refused rather than printed as a measurement.
            if ReaderAgent.name in grid.agents:
                raise SpecError(grid_path, "agents", f"names '{ReaderAgent.name}', which answers only memgrid's "
                                f"generated persons (it looks for their attribute values), not suite '{grid.suite}'",
                                f"use {ExtractiveAgent.name} (LLM-free, extractive) or a command agent")

        # A cell judges where it runs, and model judges keep their cache beside the runs (CACHE_FILE, shared by a
        # run, its resume and its reproductions), which only the controller writes: every executor but local
        # runs cells on other nodes, with a scratch folder for a run folder.
        if grid.judge_endpoint == "openai":
            if SCRIPTED in grid.judges:
                raise SpecError(grid_path, "judges", "names the scripted judge, which speaks only through the model "
                                "gateway", "list the endpoint's model ids, or drop judge_endpoint for [scripted]")
            if self.hosted(grid, grid_path) is None:
                raise SpecError(grid_path, "judge_endpoint", "asks a hosted benchmark's own judge prompt, but this grid's "
                                "persons are memgrid's own", f"name a suite memgrid task import --format "
                                f"{'|'.join(hosting(self.name))} wrote, or list model ids for the model gateway")
        if grid.judges and grid.executor != "local":
            raise SpecError(grid_path, "judges", f"names model judges, whose cache only this machine keeps, but the "
                            f"cells would run on executor {grid.executor}", "use --executor local, or drop judges "
                            "(the deterministic panel judges on any node)")
        self.check_submissions(grid, grid_path, arms)
        self.check_model_answerers(grid, grid_path, arms, agent_classes)
        for name in grid.arms:
            arm, kind = arms[name], kind_of(arms[name])
            if kind.submission:
                continue
            if arm.files or arm.memory_file or kind.prefetches or (kind.ingests and arm.ingest is None):
                raise SpecError(grid_path, "arms", f"names '{name}', which has no way to build and search a person's "
                                "memory here", "use arms of kind none (bare), corpus (full_context), oracle "
                                "(oracle_memory) or mcp with an ingest (recall)")

    def check_model_answerers(self, grid: GridSpec, grid_path, arms: dict[str, ArmSpec], agent_classes: dict) -> None:
        """A model answers a hosted benchmark's questions only with the benchmark's own answer prompt, never one of
        memgrid's passed off as its: a format that hosts none, or an arm handed every record (the benchmark's
        whole-history track asks its model otherwise), is refused by name."""
        answerers = [a for a in grid.agents if getattr(agent_classes.get(a), "needs_model", False)]
        hosted = self.hosted(grid, grid_path)
        if not answerers or hosted is None:
            return
        if hosted.source().answer_prompt is None:
            raise SpecError(grid_path, "agents", f"names '{answerers[0]}', a model answerer, but memgrid hosts no answer "
                            f"prompt of suite '{grid.suite}''s benchmark ({hosted.format}), and a prompt of its own would "
                            "not be the benchmark's", f"use {ExtractiveAgent.name} (LLM-free) or a command agent")
        whole = [n for n in grid.arms if kind_of(arms[n]).whole_history]
        prompt = hosted.source().history_prompt
        if whole and prompt is None:
            raise SpecError(grid_path, "arms", f"names '{whole[0]}', which hands the answerer every record, but "
                            f"{hosted.format}'s answer prompt is for memories a search returned, and memgrid hosts no "
                            "prompt of its whole-history track", f"drop {whole[0]} from this grid, or answer with "
                            f"{ExtractiveAgent.name}")
        if whole:
            self.check_history_sent_whole(grid, grid_path, hosted, prompt, whole[0])

    def check_history_sent_whole(self, grid: GridSpec, grid_path, hosted: HostedSuite, prompt: AnswerPrompt,
                                 arm: str) -> None:
        """The benchmark's code cuts a history too long for its model, and memgrid sends every record: a persona and
        period it would cut is refused by name before the engine, never asked otherwise than the benchmark asks."""
        periods = self.hosted_periods(hosted)
        for persona in sorted(periods) if grid.tasks == "all" else grid.tasks:
            for period in [p for p in grid.conditions if p in periods.get(persona, ())]:
                unit = hosted.source().personal_unit(hosted.folder(None), persona, period)
                for model in grid.models:
                    why = next(filter(None, (prompt.cut(model, q, unit.records) for q in unit.questions)), None)
                    if why:
                        raise SpecError(grid_path, "arms", f"names '{arm}', but {hosted.format}'s whole-history track "
                                        f"would cut {persona}'s {period} history for model {model} ({why}), and "
                                        "memgrid asks with the whole history or not at all", f"drop {arm} or "
                                        f"period {period}, or use a model with a larger context")

    def plays(self, arm: ArmSpec, agent: str) -> bool:
        return kind_of(arm).submission == (agent == SubmissionAgent.name)

    def check_submissions(self, grid: GridSpec, grid_path, arms: dict[str, ArmSpec]) -> None:
        """A submission answers with its own answer.sh (the `submission` agent), every other arm through the grid's
        other agents (`plays`): a grid of both names both sorts of agent, so each arm has cells and each cell one
        answerer, and one report holds the submissions beside the baselines."""
        subs = [a for a in grid.arms if kind_of(arms[a]).submission]
        others = [a for a in grid.arms if a not in subs]
        answerers = [a for a in grid.agents if a != SubmissionAgent.name]
        if SubmissionAgent.name in grid.agents and not subs:
            raise SpecError(grid_path, "agents", f"names '{SubmissionAgent.name}', which answers only for an arm of "
                            "kind memora-submission", "use reader or a command agent, or grid a submission arm")
        if subs and SubmissionAgent.name not in grid.agents:
            raise SpecError(grid_path, "agents", f"names {', '.join(grid.agents)}, but arm '{subs[0]}' is a Memora "
                            "submission, which answers with its own answer.sh", f"add {SubmissionAgent.name} to agents")
        if subs and others and not answerers:
            raise SpecError(grid_path, "agents", f"names only {SubmissionAgent.name}, which answers for the submissions "
                            f"alone: arm '{others[0]}' would have no cells", "add reader (or a command agent) to agents")
        if subs and answerers and not others:
            raise SpecError(grid_path, "agents", f"names '{answerers[0]}', but every arm is a submission, which answers "
                            f"itself: '{answerers[0]}' would have no cells", f"set agents: [{SubmissionAgent.name}], or "
                            "add a baseline arm")
        for name in subs:
            if not arm_image_needed(arms[name].root):
                raise SpecError(arms[name].root / "Dockerfile", "(file)", "does not exist: a submission's build.sh, "
                                "search.sh and answer.sh live in its image", "memgrid arm add --kind memora-submission "
                                "writes one (ARG BASE / FROM ${BASE}, the scripts copied to /app)")

    def prepare(self, client, grid: GridSpec, grid_path, images, log=print) -> PersonalSetup:
        return PersonalSetup(self.panel(client, grid, grid_path, images, log), self.hosted(grid, grid_path))

    def panel(self, client, grid: GridSpec, grid_path, images, log=print) -> PanelSetup | None:
        if not grid.judges:
            return None
        if grid.judge_endpoint == "openai":
            if not os.environ.get(openai_judges.KEY_ENV):
                raise UserError(f"judges {grid.judge_panel or ', '.join(grid.judges)}: {openai_judges.KEY_ENV} is not "
                                "set: fix: export it in the shell that runs memgrid (it stays in memgrid's process), or "
                                "drop judges for the deterministic panel")
            return PanelSetup(tuple(grid.judges), None, None, "openai", grid.judge_panel)
        if len({m == SCRIPTED for m in grid.judges}) > 1:
            raise SpecError(grid_path, "judges", "mixes the scripted judge with live models",
                            "list only live model ids, or only scripted")
        if grid.judges[0] != SCRIPTED and not live_api_key("anthropic"):
            raise UserError(f"judges {', '.join(grid.judges)}: ANTHROPIC_API_KEY is not set: fix: export it in the shell "
                            "that runs memgrid (it reaches only the model gateway sidecar), or use judges: [scripted]")
        from runner.env.images import ensure_derived

        return PanelSetup(tuple(grid.judges), ensure_derived(client, "model", images.base, log), images.base.tag)

    def lock_entries(self, setup: PersonalSetup) -> dict:
        entry = {"deterministic": panel_names()}
        published = setup.hosted.source().answer_judges if setup.hosted is not None else ()
        if setup.panel is not None and published:
            openai = setup.panel.endpoint == "openai"
            entry.update(models=list(setup.panel.models), panel=setup.panel.name, endpoint=setup.panel.endpoint,
                         answer_prompts={p.name: {"system": p.system, "user": p.user, "sha256": p.sha256,
                                                  "source": p.source, "publisher_model": p.model,
                                                  "json_reply": p.json_reply} for p in published},
                         **({"base_url": openai_judges.public_url(openai_judges.Endpoint.from_env().base_url)} if openai
                            else {"model_image": setup.panel.model_image.id}))
        elif setup.panel is not None and setup.panel.endpoint == "openai":
            entry.update(models=list(setup.panel.models), panel=setup.panel.name, endpoint="openai",
                         base_url=openai_judges.public_url(openai_judges.Endpoint.from_env().base_url),
                         system_prompt=openai_judges.SYSTEM_PROMPT, prompt=openai_judges.USER_PROMPT,
                         prompt_sha256=openai_judges.PROMPT_SHA256)
        elif setup.panel is not None:
            entry.update(models=list(setup.panel.models), prompt=model_panel.JUDGE_PROMPT,
                         prompt_sha256=model_panel.PROMPT_SHA256, check_prompt=model_panel.CHECK_PROMPT,
                         check_prompt_sha256=model_panel.CHECK_PROMPT_SHA256, model_image=setup.panel.model_image.id)
        return {"judges": entry, **({"hosted_suite": setup.hosted.lock_entry()} if setup.hosted else {})}

    def bundle_search(self, ctx: TrialContext, cell: CellSpec, unit: Unit, store: tuple[Entry, ...]) -> Bundle:
        arm = ctx.arms[cell.arm]
        config = agent_config(cell, arm)
        memory = CellMemory(UnitMemory(unit), None, cell.condition, cell.seed, store)
        entries = [Entry("agent/prompt.txt", SEARCH_PROMPT.encode()),
                   Entry("agent/instructions.md", arm_instructions(arm).encode()),
                   Entry("agent/config.json", json.dumps(config, sort_keys=True, indent=2).encode()),
                   *kind_of(arm).memory_entries(arm, memory)]
        return bundle_of(entries)

    def bundle_answer(self, ctx: TrialContext, cell: CellSpec, unit: Unit, kept: dict[str, list[str]],
                      model_requests: list[dict] | None = None) -> Bundle:
        """The isolated answer container's files: each question's request with its released records, and for a model
        answerer each request as the model is sent it (`model_requests`)."""
        by_id = {r.id: r for r in unit.records}
        entries = [Entry("agent/prompt.txt", ANSWER_PROMPT.encode()),
                   Entry("agent/config.json", json.dumps(agent_config(cell, ISOLATED), sort_keys=True, indent=2).encode())]
        for q in unit.questions:
            # each record's text as a whole, and its turns by role, with the roles that speak for the persons asked
            request = {"question": q.id, "text": q.text, "speakers": list(unit.speakers),
                       **({"short": True} if unit.short_answers else {}),
                       "records": [{"id": i, "date": by_id[i].date, "text": by_id[i].text,
                                    "turns": [list(t) for t in by_id[i].turns()]} for i in kept[q.id]]}
            entries.append(Entry(f"requests/{q.id}.json", json.dumps(request, indent=1).encode()))
        if model_requests is not None:
            entries.append(Entry(MODEL_REQUESTS, "".join(json.dumps(line) + "\n" for line in model_requests).encode()))
        return bundle_of(entries)

    def model_requests(self, ctx: TrialContext, cell: CellSpec, unit: Unit, kept: dict[str, list[str]]) -> list[dict]:
        """Each question's request as the benchmark's code sends it for the records released, or the answer recorded
        where its code asks no model."""
        prompt = self.answer_prompt(ctx.protocol_setup, ctx.arms[cell.arm])
        model, by_id, lines = ctx.agent_setups[cell.agent].model, {r.id: r for r in unit.records}, []
        messages_api = ctx.agent_setups[cell.agent].api == "anthropic"
        for q in unit.questions:
            body = prompt.request(model, q, [by_id[i] for i in kept[q.id]])
            if body is not None and messages_api:
                body = as_messages_request(body)
            lines.append({"question": q.id, **({"request": body} if body is not None
                                               else {"request": None, "answer": prompt.unasked(q)})})
        return lines

    def answer_prompt(self, setup: "PersonalSetup | None", arm: ArmSpec) -> AnswerPrompt | None:
        """How a model answerer is asked: the hosted benchmark's own prompt for what the arm releases (the memories a
        search returned, or the whole history; None: none memgrid hosts), or memgrid's default for its generated
        persons."""
        hosted = setup.hosted if setup is not None else None
        if hosted is None:
            return DEFAULT_ANSWER_PROMPT
        source = hosted.source()
        return source.history_prompt if kind_of(arm).whole_history else source.answer_prompt

    def build(self, ctx: TrialContext, cell: CellSpec, unit: Unit, arm: ArmSpec, phases: dict,
              proofs: list[dict]) -> tuple[tuple[Entry, ...], dict, gate.GateDecision]:
        """The arm's own ingest over the person's records: the store, its report, and the build's proofs
        (bundle verified, store populated by an ingest that exited 0). A store is built once per (arm, person,
        period) and kept in the store cache (arms/store_cache.py), keyed by what it is a function of: the arm's
        folder, image, ingest command and embedder, and the records its ingest is given; every other cell of the
        person and period (another agent, seed, run or a reproduction) takes it from there, its digest checked."""
        contract = kind_of(arm).submission  # a submission's build.sh over the contract's corpus, not an ingest
        if contract:
            arm = replace(arm, ingest=submission.BUILD, ingest_seconds=submission.BUILD_SECONDS)
        docs = (submission.corpus_entries(unit) if contract else
                tuple(Entry(f"ingest/corpus/docs/{r.id}.jsonl", record_file(r)) for r in unit.records))
        command = fill(arm.ingest, corpus=f"{INGEST_ROOT}/corpus", store=STORE_DIR, namespace=unit.id)
        key = person_store_key(ctx, arm, unit, cell.condition, docs)
        cached = store_cache.read(key, log=lambda m: None)  # one that fails its digest is set aside: built again
        if cached is not None:
            raw, report = cached
            report = {**report, "source": "cache", "cache_key": key.key}
            phases["build"] = report
            built = [gate.GateProof("store_cached", True, f"the store cache's {key.key[:12]}: its tar matches its "
                                    f"digest; built once in {report.get('seconds')} s")]
            built += [] if contract else [gate.store_proof(report)]
            proofs.extend({"phase": "build", **vars(p)} for p in built)
            return tuple(safe_entries(raw)), report, gate.decide(built)
        t = time.monotonic()
        refusals: list[str] = []  # a submission's index that cannot be carried: its own doing, recorded
        steps, store, digest, proof = harness_step(ctx, cell, arm, (), [("build", command, b"{}")], extra=docs,
                                                   seconds=arm.ingest_seconds,
                                                   refused=refusals.append if contract else None)
        receipt = store_receipt(list(store))
        code = steps[0].exit_code if steps else None
        log_tail = (steps[0].stderr or steps[0].stdout).strip()[-300:] if steps else ""
        report = {"namespace": unit.id, "documents": None if contract else int(receipt.get("documents", 0)),
                  "corpus_documents": len(unit.records) if contract else len(docs),
                  "seconds": round(time.monotonic() - t, 2), "store_digest": digest, "files": len(store),
                  "bytes": sum(len(e.data) for e in store), "exit_code": code, "log_tail": log_tail,
                  "timed_out": steps[0].timed_out if steps else None, "source": "ingested", "cache_key": key.key,
                  **({"refused": refusals[0]} if refusals else {})}
        phases["build"] = report
        built = [proof]
        # A submission's build that fails leaves what it leaves: its own doing, recorded (exit_code) and scored.
        if proof.passed and not contract:
            built.append(gate.store_proof(report) if code == 0 else
                         gate.GateProof("store_populated", False, f"the ingest exited {code}: {log_tail[-200:]}"))
        decision = gate.decide(built)
        proofs.extend({"phase": "build", **vars(p)} for p in built)
        if decision.admitted and code == 0 and not refusals:
            store_cache.write(key, pack(list(store)), report)
        return store, report, decision

    def run_cell(self, ctx: TrialContext, cell: CellSpec, attempt: int, bundle: Bundle | None = None) -> LedgerRow:
        """`bundle`: a test's hand-made answer bundle (to prove the isolation proof can fail)."""
        unit = self.unit(ctx, cell)
        arm = ctx.arms[cell.arm]
        cell_dir = ctx.run_dir / "cells" / cell.cell_id
        started_at, t0 = now(), time.monotonic()
        row = new_row(ctx, cell, attempt)
        phases: dict[str, dict] = {}
        proofs: list[dict] = []
        result: dict = {}
        took: dict[str, float] = {}  # seconds per step, for the ledger's timings

        def step(name: str, since: float) -> None:
            took[name] = round(time.monotonic() - since, 3)

        def finish(**updates) -> LedgerRow:
            row.update(updates)
            row["timings"] = json.dumps(took) if took else None
            row["gate_proofs"] = json.dumps(proofs)
            write_json(cell_dir / "phases.json", phases)
            return LedgerRow(**row, started_at=started_at, ended_at=now(), wall_seconds=round(time.monotonic() - t0, 3),
                             protocol=self.name, result=json.dumps(result) if result else None)

        try:
            for phase in ("search", "answer"):
                (cell_dir / phase).mkdir(parents=True, exist_ok=True)
            # 1. Build: the arm's own write path over the person's records.
            store = ()
            if kind_of(arm).ingests or kind_of(arm).submission:
                t = time.monotonic()
                store, report, built = self.build(ctx, cell, unit, arm, phases, proofs)
                step("build", t)
                row["store_digest"] = report["store_digest"]
                if not built.admitted:
                    return finish(admitted=False, discard_reason=built.discard_reason)
            ctx.check_cancel()
            # 2. Search and 3. answer: the harness's reader and the cell's agent, or a submission's own scripts.
            answered = (self.submission_answers if kind_of(arm).submission else self.reader_answers)(
                ctx, cell, attempt, unit, store, phases, proofs, step, cell_dir, bundle)
            row.update(answered.row)
            if answered.answers is None:
                return finish()
            # 4. Judges, outside every container.
            t = time.monotonic()
            result = self.judge(ctx, cell, attempt, unit, answered.answers, answered.released, cell_dir, answered.problems)
            if answered.contract is not None:
                result["contract"] = answered.contract
            if answered.prompt is not None:
                result["answer_prompt"] = answered.prompt
            if "build" in phases:  # the store this cell searched: built now, or once before (its build's figures)
                result["store"] = {k: phases["build"][k] for k in ("source", "seconds", "bytes", "documents")}
            step("judge", t)
            return finish(outcome="scored", checker_detail=f"FAMA {result['fama']:.2f} over {len(unit.questions)} questions")
        except Exception as e:
            return finish(**cell_failure(ctx, e))

    def reader_answers(self, ctx: TrialContext, cell: CellSpec, attempt: int, unit: Unit, store: tuple[Entry, ...],
                       phases: dict, proofs: list[dict], step, cell_dir: Path, bundle: Bundle | None) -> Answers:
        """The harness's reader searches the arm's memory; the cell's agent answers in one isolated container."""
        b_search = self.bundle_search(ctx, cell, unit, store)
        (cell_dir / "search" / "bundle.manifest").write_text(b_search.manifest)
        queries = {"k": SEARCH_K, "questions": [{"id": q.id, "text": q.text} for q in unit.questions]}
        channel = ReferenceChannel("search", (Entry("queries.json", json.dumps(queries).encode()),),
                                   ("--personal-search",), {"questions": len(unit.questions), "k": SEARCH_K})
        t = time.monotonic()
        s = run_phase(ctx, replace(cell, agent=ANSWERER_READER), PhaseSpec(
            "search", SEARCH_PROMPT, b_search, cell_dir / "search", SEARCH_SECONDS, channel, export=None), attempt)
        wait_for_removals([s.remover])
        step("search", t)
        proofs.extend({"phase": "search", **p} for p in s.decision.as_json())
        phases["search"] = {"admitted": s.decision.admitted, "discard_reason": s.decision.discard_reason,
                            "bundle_digest": b_search.digest, "store_in_digest": phases.get("build", {}).get("store_digest")}
        if not s.decision.admitted:  # the search is the harness's reader, not the cell's agent
            return Answers({**session_fields(s), "model": None, "agent_ended": None})
        retrieved = {e["question"]: [str(i) for i in e.get("ids", [])] for e in s.transcript.events
                     if e.get("type") == "retrieved"}
        arm = ctx.arms[cell.arm]  # an arm with no search tool is listed whole by the harness's reader
        kind = kind_of(arm)
        release = release_all(unit, retrieved, phases["search"], listed=kind.location(arm).tool is None,
                              cited_only=unit.oracle_per_question and isinstance(kind, OracleKind))
        ctx.check_cancel()
        # The answer, isolated: the requests only; a model answerer's rendered once, counted by the gate as sent.
        kept = {q: r.kept for q, r in release.items()}
        model_answers = agent_class(cell.agent, ctx.command_agents).needs_model
        lines = self.model_requests(ctx, cell, unit, kept) if model_answers else None
        b_answer = bundle or self.bundle_answer(ctx, cell, unit, kept, lines)
        (cell_dir / "answer" / "bundle.manifest").write_text(b_answer.manifest)
        options = {q.id: gen.options(q) for q in unit.questions}
        a_channel = ReferenceChannel("answer", (Entry("options.json", json.dumps(options).encode()),),
                                     ("--personal-answer",), {"questions": len(unit.questions)})
        t = time.monotonic()
        prompt = self.answer_prompt(ctx.protocol_setup, arm)
        due = sum(1 for line in lines if line["request"] is not None) if lines is not None else None
        a = run_phase(ctx, cell, PhaseSpec("answer", ANSWER_PROMPT, b_answer, cell_dir / "answer", ANSWER_SECONDS,
                                           a_channel, export=None, required_paths=(), arm=ISOLATED,
                                           pre_session=lambda sandbox: [isolation_proof(sandbox, ALLOWED_IN_ANSWER)],
                                           # a model answerer offline: the scripted model reads the prompt's records
                                           model_script={"mode": "answer", **prompt.reading()}
                                           if prompt is not None else None, requests_due=due),
                      attempt)
        wait_for_removals([a.remover])
        step("answer", t)
        proofs.extend({"phase": "answer", **p} for p in a.decision.as_json())
        phases["answer"] = {"admitted": a.decision.admitted, "discard_reason": a.decision.discard_reason,
                            "bundle_digest": b_answer.digest, "agent_ended": a.transcript.ended}
        fields = {**session_fields(a), "bundle_digest": b_answer.digest}
        if not a.decision.admitted:
            return Answers(fields)
        asked = None
        if model_answers:
            asked = {"name": prompt.name, "sha256": prompt.sha256, "source": prompt.source, "model": a.transcript.model,
                     "settings": dict(prompt.settings), "api": ctx.agent_setups[cell.agent].api,
                     "asked": sum(1 for e in a.transcript.events if e["type"] == "answer" and e.get("asked"))}
        return Answers(fields, answers_of(a.transcript), release, prompt=asked)

    def submission_answers(self, ctx: TrialContext, cell: CellSpec, attempt: int, unit: Unit,
                           store: tuple[Entry, ...], phases: dict, proofs: list[dict], step, cell_dir: Path,
                           bundle: Bundle | None) -> Answers:
        """A submission's search.sh over its index, then its answer.sh per question, each in a fresh container
        (submission.py). What its scripts did wrong is recorded (`contract`) and scored, never discarded."""
        arm = ctx.arms[cell.arm]
        t = time.monotonic()
        found = submission.search(ctx, cell, unit, arm, store)
        step("search", t)
        proofs.append({"phase": "search", **vars(found.proof)})
        phases["search"] = {"admitted": found.proof.passed, "calls": found.calls, "malformed_lines": len(found.malformed),
                            "malformed": found.malformed[:20], "store_in_digest": phases["build"]["store_digest"]}
        if not found.proof.passed:
            decision = gate.decide([found.proof])
            return Answers({"admitted": False, "discard_reason": decision.discard_reason})
        release = release_all(unit, found.ids, phases["search"], contract=True)
        ctx.check_cancel()
        t = time.monotonic()
        answered = submission.answer_all(ctx, cell, unit, arm, {q: r.kept for q, r in release.items()},
                                         cell_dir / "answer")
        step("answer", t)
        proofs.extend({"phase": "answer", "question": a.question, **vars(p)} for a in answered for p in a.proofs)
        decision = gate.decide([p for a in answered for p in a.proofs])
        phases["answer"] = {"admitted": decision.admitted, "discard_reason": decision.discard_reason,
                            "questions": {a.question: {"ended": a.ended, "problem": a.problem,
                                                       "problem_kind": a.problem_kind, "seconds": a.seconds,
                                                       "bundle_digest": a.bundle_digest} for a in answered}}
        fields = {"admitted": decision.admitted, "discard_reason": decision.discard_reason,
                  "agent_ended": first_ending(*(a.ended for a in answered if a.ended)),
                  "bundle_digest": sha256_json({a.question: a.bundle_digest for a in answered})}
        if not decision.admitted:
            return Answers(fields)
        problems = {a.question: f"{a.problem_kind}: {a.problem}" for a in answered if a.problem_kind}
        return Answers(fields, {a.question: a.answer for a in answered}, release, problems,
                       submission.contract_record(phases["build"], found, release, answered))

    def judge(self, ctx: TrialContext, cell: CellSpec, attempt: int, unit: Unit, answers: dict[str, str],
              release: dict[str, Released], cell_dir: Path, problems: dict[str, str] | None = None) -> dict:
        """Every criterion through the deterministic panel and, with model judges, through theirs (which then
        decides; the two panels' agreement is kept). `problems`: why a submission's answer does not count (it is
        judged as the empty answer it then is)."""
        problems = problems or {}
        kept = {q: r.kept for q, r in release.items()}
        setup: PanelSetup | None = ctx.protocol_setup.panel if ctx.protocol_setup is not None else None
        hosted = ctx.protocol_setup.hosted if ctx.protocol_setup is not None else None
        source = hosted.source() if hosted else None
        endpoint, gateway, cache, answer_judges = None, None, None, []
        if setup is not None:
            cache = model_panel.JudgeCache.open(ctx.run_dir.parent / CACHE_FILE)
            # asked from this process through the OpenAI-compatible endpoint (no gateway: the key never leaves it),
            # or through a gateway started for the cell (the scripted model offline)
            gateway = openai_judges.Endpoint.from_env() if setup.endpoint == "openai" else model_panel.Gateway(None)
            # A format whose benchmark publishes answer judges (LoCoMo's vendors' J) has the grid's models ask
            # those, every prompt of it; its criteria are then the deterministic panel's.
            answer_judges = [openai_judges.AnswerJudge(p, m, gateway, cache) for p in source.answer_judges
                             for m in setup.models] if source is not None else []
            if setup.endpoint != "openai":
                if answer_judges:
                    needed = any(cache.get(j.key(q.text, gold, judged_part(answers.get(q.id, ""))[0])) is None
                                 for q in unit.questions if (gold := source.judged_gold(q)) is not None
                                 for j in answer_judges)
                else:
                    items = [(q.text, answers.get(q.id, ""), c) for q in unit.questions
                             for c in (*q.presence, *q.forgetting)]
                    needed = model_panel.uncached(setup.models, cache, items)
                if needed:
                    endpoint = ModelEndpoint(ctx.client, setup.model_image.tag, ctx.run_id, cell.cell_id, setup.models[0],
                                             {"mode": "judge"} if setup.scripted else None, guard_image=setup.guard_image)
                    endpoint.start(attempt)
                    gateway.url = f"http://{gateway_address(endpoint)}:8080"
        criteria_setup = None if answer_judges else setup
        try:
            questions, detail = [], []
            for q in unit.questions:
                answer, cut = judged_part(answers.get(q.id, ""))
                own = source.answer_scores(q, answer) if source else {}  # the benchmark's own scorer, on what the judges read
                own_recall = source.evidence_recall(q, kept[q.id]) if source else None
                gold = source.judged_gold(q) if answer_judges else None
                labels = [j.judge(q.text, gold, answer) for j in answer_judges] if gold is not None else []
                own_judged = answer_labels(labels, answer_judges)
                panel = OFFLINE_PANEL if criteria_setup is None else model_judges(setup, gateway, cache, q.text)
                criteria = [(c, True) for c in q.presence] + [(c, False) for c in q.forgetting]
                judged = [judge_criterion(answer, c, e, panel) for c, e in criteria]
                offline = judged if criteria_setup is None else [judge_criterion(answer, c, e) for c, e in criteria]
                # agreement only where the deterministic panel could judge (a sub-question naming no value: not)
                compared = [(j, o) for j, o in zip(judged, offline) if o.valid]
                cp = sum(j.correct for j in judged if j.expected)
                cf = sum(j.correct for j in judged if not j.expected)
                s = metrics.score(len(q.presence), cp, len(q.forgetting), cf)
                questions.append({"id": q.id, "kind": q.kind, "np": len(q.presence), "nf": len(q.forgetting), "cp": cp,
                                  "cf": cf, "fama": s.fama, "mpa": s.mpa, "faa": s.faa, "lam": s.lam,
                                  "released": len(kept[q.id]), "violations": len(release[q.id].violations),
                                  **({"dropped": {k: len(v) for k, v in release[q.id].dropped.items()}}
                                     if release[q.id].dropped else {}),
                                  **({"answer_problem": problems[q.id]} if q.id in problems else {}),
                                  "evidence_released": sum(e in kept[q.id] for e in q.evidence),
                                  "evidence": len(q.evidence),
                                  "forgotten_released": sum(e in kept[q.id] for e in q.forgotten),
                                  "forgotten": len(q.forgotten),
                                  "invalid_judgements": sum(len(panel) - j.valid for j in judged),
                                  "undecided": sum(not j.decided for j in judged),
                                  "panels_agree": sum(j.correct == o.correct for j, o in compared) if compared else None,
                                  "panels_compared": len(compared),
                                  **({"answer_cut_at": JUDGED_CHARS} if cut else {}), **({"own": own} if own else {}),
                                  **({"own_recall": own_recall} if own_recall is not None else {}),
                                  **({"own_judged": own_judged} if own_judged else {}),
                                  **({"answer_judge_invalid": sum(v.mentions is None for v in labels)} if labels else {})})
                detail.append({"question": q.id, "text": q.text, "answer": answer, "released": list(kept[q.id]),
                               **({"own_scores": own} if own else {}),
                               **({"own_evidence_recall": own_recall} if own_recall is not None else {}),
                               **({"answer_judgements": [vars(v) for v in labels]} if labels else {}),
                               "violations": release[q.id].violations,
                               "dropped": {k: list(v) for k, v in release[q.id].dropped.items()},
                               "criteria": [{"value": j.value, "expected_mention": j.expected, "correct": j.correct,
                                             **({"id": c.id, "evaluation_type": c.evaluation_type, "named": c.named}
                                                if isinstance(c, SubQuestion) else {}),
                                             "verdicts": [vars(v) for v in j.verdicts],
                                             **({"deterministic": [vars(v) for v in o.verdicts],
                                                 "deterministic_correct": o.correct} if setup else {})}
                                            for (c, _), j, o in zip(criteria, judged, offline)]})
        finally:
            if endpoint is not None:
                endpoint.collect(cell_dir)
                endpoint.stop()
        write_json(cell_dir / "verdict.json", {"judges": [j.name for j in panel], "questions": detail})
        n = len(questions)
        return {"fama": sum(q["fama"] for q in questions) / n, "mpa": sum(q["mpa"] for q in questions) / n,
                "faa": sum(q["faa"] for q in questions) / n, "violations": sum(q["violations"] for q in questions),
                "search_k": SEARCH_K, "judges": [j.name for j in panel],
                "panel": "model" if criteria_setup else "deterministic",
                **({"judge_endpoint": setup.endpoint} if setup else {}),
                **({"answer_judges": {j.name: {"prompt": j.prompt.name, "prompt_sha256": j.prompt.sha256,
                                               "model": j.model} for j in answer_judges},
                    "answer_model": cell.agent} if answer_judges else {}),
                **(hosted.lock_entry() if hosted else {"suite": None, "format": None}),
                **({"judge_requests": gateway.requests, "judge_usage": gateway.usage} if setup else {}),
                "questions": questions}

    def summary(self, rows: list[dict], planned: int | None = None) -> list[dict]:
        from runner.protocols.personal.analysis import summarise

        return summarise(rows, planned)

    def summary_table(self, summary: list[dict]) -> tuple[list[str], list[list[str]]]:
        from runner.protocols.personal.analysis import table

        return table(summary)

    def extra_tables(self, summary: list[dict]) -> list[tuple[str, list[str], list[list[str]], str]]:
        from runner.protocols.personal.analysis import (CONTRACT_NOTE, EVIDENCE_NOTE, SENSITIVITY_NOTE, STORES_NOTE,
                                                        comparability, contract_table, evidence_table, judged_by,
                                                        own_note, own_table, panel_table, published_own_table,
                                                        published_table, reward_note, reward_table, sensitivity_table,
                                                        stores_table, table3, table3_title)

        tables = []
        columns, lines = reward_table(summary)
        if lines:
            tables.append(("reward as the hosted benchmark's card defines it", columns, lines, reward_note(summary)))
        title, note = table3_title(summary)
        tables.append((title, *table3(summary), f"{note} {judged_by(summary)}".strip()))
        columns, lines = published_table(summary)
        if lines:
            tables.append(("remembering FAMA %, published rows beside memgrid's", columns, lines, comparability(summary)))
        tables.append(("evidence: what the search returned, and FAMA split by it", *evidence_table(summary),
                       EVIDENCE_NOTE))
        columns, lines = own_table(summary)
        if lines:
            tables.append(("the benchmark's own scores per question kind", columns, lines, own_note(summary)))
        columns, lines, note = published_own_table(summary)
        if lines:
            tables.append(("published figures beside memgrid's", columns, lines, note))
        columns, lines = sensitivity_table(summary)
        if lines:
            tables.append(("judge sensitivity: the same answers under each published answer prompt", columns, lines,
                           SENSITIVITY_NOTE))
        columns, lines = stores_table(summary)
        if lines:
            tables.append(("stores: built by the arm's own ingest, once per person and period", columns, lines,
                           STORES_NOTE))
        columns, lines = contract_table(summary)
        if lines:
            tables.append(("submissions: their scripts against the contract", columns, lines, CONTRACT_NOTE))
        columns, lines = panel_table(summary)
        if lines:
            tables.append(("the model judge panel", columns, lines, "Agreement: the share of criteria the deterministic "
                           "judges scored as the model panel did. Invalid verdicts are never scored as quality."))
        return tables

    def report_html(self, run_id: str, lock: dict, summary: list[dict]) -> str | None:
        from runner.protocols.personal.report import render

        return render(run_id, lock, summary)
