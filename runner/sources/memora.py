"""Memora (github.com/geniesinc/Memora) as published, hosted in the personal protocol.

A Memora checkout holds, per period (`weekly`, `monthly`, `quarterly`) and persona,
`data/<period>/<persona>/conversations/session_NNNN.json` (a dated user-assistant session: session_id, date,
persona, conversation turns with speaker and message) and `data/<period>/<persona>/evaluation_questions_<persona>.json`
(questions by task type, each with its question_date, the evidence it rests on and yes/no sub-questions of
type memory_presence or forgetting_absence). memgrid's personal protocol has the same parts: persons = personas,
conditions = periods, records = sessions, questions with their sub-questions as criteria.

The import copies the files unchanged into tasks/<suite>/source/<period>/<persona>/ and records the checkout's
commit and every file's sha256 in tasks/<suite>/provenance.json; the suite is read from there (`hosted_unit`),
every file checked against its digest, so a hosted person is the one imported or it is refused by name. Every
file is read at import and a malformed one refuses its persona and period in one line (file, field, fix); the
others go on.
"""

import json
import re
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from pathlib import Path

import yaml

from runner.digest import sha256_bytes
from runner.errors import SpecError, UserError
from runner.results.reward import RewardMapping
from runner.units.personal import AnswerPrompt, MemoriesPrompt, Question, Record, SubQuestion, Unit
from runner.sources.base import (ExportResult, ImportResult, Refusal, Refused, Source, SourceFormat, hosted_files,
                                 new_suite_folder, read_provenance)

REPOSITORY = "https://github.com/geniesinc/Memora"
PERIODS = ("weekly", "monthly", "quarterly")
TASK_TYPES = ("remembering", "reasoning", "recommending")
ROLES = {"user_agent": "user", "ai_agent": "assistant"}  # Memora's speakers, as the arm's ingest input names them
# What each kind of sub-question expects; memgrid's panel scores presence as "mentioned", forgetting as "not".
EXPECTED = {"memory_presence": "yes", "forgetting_absence": "no"}
SESSION_FILE = re.compile(r"^session_(\d+)\.json$")

# Memora's agent track asks its answer model this, per question, over the memories its memory system returned
# (evals/agent_eval/memory_to_answer.py, generate_answer, at a649318): the system prompt as its f-string writes it
# (the blank line after the first carries the f-string's 8 spaces of indentation), each memory as "N. text (relevance:
# score)". memgrid's search releases records without a score, so each reads 0.00, as Memora's code writes a memory
# that has none. With no memory, Memora answers its fixed line and asks no model.
ANSWER_PROMPT = MemoriesPrompt(
    name="memora-agent-track",
    system=("You are a helpful AI assistant with access to a user's personal memory system.\n        \n"
            "Your task is to answer questions based ONLY on the user's stored memories and preferences.\n\n"
            "Guidelines:\n"
            "1. Use ONLY the information from the provided memories\n"
            "2. Be specific and reference actual items/preferences from memory\n"
            "3. If the question is about recommendations, suggest based on similar items in memory\n"
            "4. Be conversational and helpful\n"
            "5. Don't make up information not in the memories"),
    user=("User's Question: {question}\n\nUser's Relevant Memories:\n{memories}\n\n"
          "Please provide a helpful answer based on these memories."),
    memory_line="{n}. {memory} (relevance: 0.00)",
    settings=(("max_tokens", 500), ("temperature", 0.7)),
    source="evals/agent_eval/memory_to_answer.py generate_answer, github.com/geniesinc/Memora at a649318",
    no_memories="I don't have enough information in my memory to answer this question accurately.")

# Memora's model track (evals/model_eval/model_based_evaluator.py at a649318) asks its model each question over the
# whole history instead: PromptBuilder's conversation context (every session, oldest first) and build_question_prompt's
# system and user prompt, temperature 0.7 and no max_tokens (_evaluate_questions, api_client). Its date line is filled
# from a question's `session_date`, which the released questions do not have (they carry question_date), so the
# code sends none. Its context labels a turn "Assistant:" for speaker ai_agent and "User:" for speaker user: the
# released sessions name the user user_agent, so the model is shown the assistant's turns alone. memgrid sends what
# Memora's code sends, since that is what its Table 3 rows were asked (docs/benchmarks.md says so beside the track).
HISTORY_SYSTEM = (
    "You are an AI assistant with memory capabilities. The conversation history below contains ALL your previous "
    "conversations with this user - this history is PROVIDED TO YOU in this prompt.\n\nYour task is to answer the "
    "user's question based EXCLUSIVELY on the conversation history that is provided below. The conversation history "
    "contains all the information you need to answer questions about the user's preferences, activities, goals, and "
    "past interactions.\n\nCRITICAL INSTRUCTIONS:\n"
    "1. The conversation history is PROVIDED IN THIS PROMPT - you have full access to it\n"
    "2. Answer the question using ONLY information from the conversation history provided below\n"
    "3. Do NOT say \"I don't have access\" or \"I cannot access\" - you DO have access because the history is right "
    "here in this prompt\n"
    "4. Extract relevant information from the conversation history and use it to answer the question\n"
    "5. If you learned about user preferences, activities, content, or goals from the conversations below, use them in "
    "your response\n"
    "6. If information was mentioned in earlier conversations but later updated or deleted, use only the most recent "
    "information\n"
    "7. Be specific and reference relevant details from the conversations\n"
    "8. If the conversation history doesn't contain enough information to answer the question, say so clearly (but do "
    "NOT say you don't have access)\n"
    "9. Do not make up information that wasn't in the conversations")
HISTORY_HEADER = ("# Conversation History\nThe following contains all your previous conversations with this user, in "
                  "chronological order:\n\n")
HISTORY_USER = ("{context}\n\n---\n\n# Current Question\nUser: {question}\n\n"
                "Based on the conversation history above, please provide your answer:")
# Where Memora's code would cut the history to fit its model (get_model_context_limit, build_question_prompt), counting
# a token per 4 characters as it does without tiktoken (an option its requirements leave commented out): its table of
# the four models of Table 3, and its cap on any context.
CONTEXT_LIMITS = {"google/gemini-3-pro-preview": 1_048_576, "gemini-3-pro-preview": 1_048_576,
                  "openai/gpt-5.2": 400_000, "gpt-5.2": 400_000,
                  "anthropic/claude-sonnet-4.5": 1_000_000, "claude-sonnet-4.5": 1_000_000,
                  "qwen/qwen3-32b": 40_960, "qwen3-32b": 40_960}
CONTEXT_CAP = 200_000
# Its fallbacks for a model its table does not name, in its order: (a word in the name, the limit it then assumes).
CONTEXT_FALLBACKS = (("gpt-5", 400_000), ("gpt-4", 128_000), ("gpt-3.5", 16_385), ("claude-sonnet-4", 1_000_000),
                     ("claude", 200_000), ("gemini-3", 1_048_576), ("gemini", 1_000_000), ("qwen", 40_960))


def tokens(text: str) -> int:
    return len(text) // 4


def table_limit(model: str) -> int | None:
    """The model's context as Memora's table names it: exactly, or either name holding the other's."""
    if model in CONTEXT_LIMITS:
        return CONTEXT_LIMITS[model]
    base = model.split("/")[-1]
    return next((v for k, v in CONTEXT_LIMITS.items() if base in k or k in base), None)


def context_budget(model: str) -> int | None:
    """get_model_context_limit: the tokens its context may hold for this model (None: unknown, never cut for size)."""
    limit = table_limit(model)
    if limit is None:
        base = model.split("/")[-1].lower()
        limit = next((v for word, v in CONTEXT_FALLBACKS if word in base), None)
    return (max(min(int(limit * 0.7) - 10_000, CONTEXT_CAP), 0) or None) if limit is not None else None  # 0: no cut


@dataclass(frozen=True)
class HistoryPrompt(AnswerPrompt):
    """Memora's model track: the question after the whole history, laid out as its PromptBuilder lays it. memgrid
    releases every record up to the question's date; Memora's code sends every session whatever the date, and each
    published question is asked after its period's last session, so on its data the two are the same."""

    def session_text(self, record: Record) -> str:
        labels = {"assistant": "Assistant"}  # its "User:" label is for a speaker the released sessions never name
        turns = [f"{labels[role]}: {message}" for role, message in record.turns() if role in labels]
        return "\n".join([f"\n## Session {record.session} - {record.date}\n", *turns, ""])

    def context(self, records: Sequence[Record]) -> str:
        ordered = sorted(records, key=lambda r: r.session)
        return "\n".join([HISTORY_HEADER, *(self.session_text(r) for r in ordered)])

    def request(self, model: str, question: Question, records: Sequence[Record]) -> dict | None:
        return self.body(model, self.user.format(context=self.context(records), question=question.text))

    def reading(self) -> dict:
        return {"item": r"^## Session ", "question": r"# Current Question\nUser: (.*?)\n\nBased on",
                "statement": r"^(User|Assistant): "}

    def fields(self) -> dict:
        return {"header": HISTORY_HEADER, "layout": "memora model track: ## Session N - date, Assistant turns"}

    def cut(self, model: str, question: Question, records: Sequence[Record]) -> str | None:
        """Why Memora's code would not send this history whole to this model (it keeps the newest sessions that
        fit), or None: it sends it whole, as memgrid does. memgrid does not reproduce the cut."""
        budget = context_budget(model)
        header = tokens(HISTORY_HEADER)
        sessions = sum(tokens(self.session_text(r)) for r in records)
        if budget is not None and header + sessions > budget - header:
            return f"its context limit for {model} is {budget:,} tokens and the history is {header + sessions:,}"
        context = tokens(self.context(records))
        # its overhead: the system prompt and the user prompt's template after the context, which starts one newline in
        overhead = tokens(self.system) + tokens(self.user.split("{context}\n", 1)[1].format(question=question.text))
        limit = table_limit(model)
        if context > CONTEXT_CAP or (limit is not None and overhead + context > limit):
            return f"the history is {context:,} tokens, over {min(CONTEXT_CAP, limit or CONTEXT_CAP):,}"
        return None


HISTORY_PROMPT = HistoryPrompt(
    name="memora-model-track", system=HISTORY_SYSTEM, user=HISTORY_USER, settings=(("temperature", 0.7),),
    source="evals/model_eval/model_based_evaluator.py PromptBuilder, github.com/geniesinc/Memora at a649318")


@dataclass(frozen=True)
class Session(Record):
    """A Memora session as one record: every turn in order, speaker-labelled in `text`."""
    conversation: tuple[tuple[str, str], ...] = ()  # (role, message) in turn order

    def turns(self) -> tuple[tuple[str, str], ...]:
        return self.conversation


@dataclass
class UnitPlan:
    """A persona over a period as it is (or, on a dry run, would be) hosted."""
    period: str
    persona: str
    suite: str
    unit: Unit
    files: dict[str, str] = field(default_factory=dict)  # path under source/ -> sha256

    def line(self) -> str:
        kinds = {k: sum(q.kind == k for q in self.unit.questions) for k in TASK_TYPES}
        criteria = [c for q in self.unit.questions for c in (*q.presence, *q.forgetting)]
        unnamed = sum(not c.named for c in criteria)
        return (f"import {self.period}/{self.persona} -> tasks/{self.suite}/: {len(self.unit.records)} sessions, "
                f"{len(self.unit.questions)} questions ({', '.join(f'{n} {k}' for k, n in kinds.items())}), "
                f"{len(criteria)} sub-questions" + (f" ({unnamed} name no value the deterministic judges can look for)"
                                                    if unnamed else ""))

    def unisolated_line(self) -> None:
        return None  # judges read the answer text only; no code of the agent's runs outside its container


def record_id(persona: str, period: str, session_id: int) -> str:
    return f"{persona}-{period}-{session_id:04d}"


def data_root(path: Path) -> tuple[Source, Path]:
    """The checkout (or the data folder alone) and its data folder: PATH may be either."""
    path = path.resolve()
    if (path / "data").is_dir():
        source, data = Source(path, "Memora"), path / "data"
    elif path.name == "data" and (path.parent / ".git").exists():
        source, data = Source(path.parent, "Memora"), path
    else:
        source, data = Source(path, "Memora"), path
    if not any((data / p).is_dir() for p in PERIODS):
        raise UserError(f"{path}: holds no Memora data (no {', '.join(PERIODS)} folder in it or in its data/) — fix: "
                        "give a checkout of github.com/geniesinc/Memora or its data/ folder")
    return source, data


def read_json(source: Source, path: Path, data: bytes):
    try:
        return json.loads(data)
    except ValueError as e:
        raise Refused(source.rel(path), "(file)", f"is not JSON ({e})", "restore the file as published") from None


JSON_NAMES = {dict: "an object", list: "a list", str: "text", int: "a whole number", float: "a number",
              bool: "true/false", type(None): "null"}


def need(value, kind, source: Source, path: Path, name: str, fix: str):
    """`value` when it is of `kind`, else the file is refused naming the field (in JSON's words: a researcher
    reads the line)."""
    if not isinstance(value, kind) or isinstance(value, bool):
        shown = "" if value is None else f" {json.dumps(value)[:60]}"
        raise Refused(source.rel(path), name, f"is {JSON_NAMES.get(type(value), type(value).__name__)}{shown}, not "
                      f"{JSON_NAMES[kind]}", fix)
    return value


def one_of(value, allowed, source: Source, path: Path, name: str, fix: str):
    """`value` when it is one of `allowed`, else the file is refused naming the field."""
    if value not in allowed:
        raise Refused(source.rel(path), name, f"is {value!r}", fix)
    return value


def iso_date(value, source: Source, path: Path, name: str) -> str:
    text = need(value, str, source, path, name, "give the date as YYYY-MM-DD")
    try:
        date.fromisoformat(text)
    except ValueError:
        raise Refused(source.rel(path), name, f"{text!r} is not a date", "give the date as YYYY-MM-DD") from None
    return text


def read_session(source: Source, path: Path, data: bytes, persona: str, period: str) -> Session:
    doc = need(read_json(source, path, data), dict, source, path, "(file)", "restore the session file as published")
    number = int(SESSION_FILE.match(path.name).group(1))
    sid = need(doc.get("session_id"), int, source, path, "session_id", "give the session's number")
    if sid != number:
        raise Refused(source.rel(path), "session_id", f"is {sid}, but the file is session {number}",
                      "restore the file as published (its name and its session_id agree)")
    if doc.get("persona") != persona:
        raise Refused(source.rel(path), "persona", f"is {doc.get('persona')!r}, not the folder's {persona!r}",
                      "keep each persona's sessions in its own folder")
    day = iso_date(doc.get("date"), source, path, "date")
    turns = need(doc.get("conversation"), list, source, path, "conversation", "give the session's turns as a list")
    conversation = []
    for i, turn in enumerate(turns):
        where = f"conversation[{i}]"
        turn = need(turn, dict, source, path, where, "give each turn as an object with speaker and message")
        speaker = one_of(turn.get("speaker"), ROLES, source, path, f"{where}.speaker",
                         f"use one of {', '.join(ROLES)} (Memora's speakers)")
        message = need(turn.get("message"), str, source, path, f"{where}.message", "give the turn's text")
        conversation.append((ROLES[speaker], message))
    text = "\n".join(f"{role}: {message}" for role, message in conversation)
    first = {role: next((m for r, m in conversation if r == role), "") for role in ("user", "assistant")}
    return Session(record_id(persona, period, sid), persona, sid, day, text, first["user"], first["assistant"],
                   tuple(conversation))


def is_session_id(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def evidence_sessions(value) -> set[int]:
    """Every session a question's nested evidence cites: each value's session_id (the session that states it), and
    a content question's session_history (the sessions that wrote, changed and trimmed the document it asks for)."""
    found, stack = set(), [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            if is_session_id(v.get("session_id")):
                found.add(v["session_id"])
            if isinstance(v.get("session_history"), list):
                found |= {s for s in v["session_history"] if is_session_id(s)}
            stack.extend(x for k, x in v.items() if k != "session_history")
        elif isinstance(v, list):
            stack.extend(v)
    return found


def evidence_values(value) -> set[str]:
    """The values a question's evidence states (every text or number in it, not its session ids)."""
    found, stack = set(), [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(x for k, x in v.items() if k not in ("session_id", "session_history"))
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, (str, int, float)) and not isinstance(v, bool):
            found.add(str(v))
    return found


def named_value(text: str, evidence) -> str:
    """What a sub-question asks the answer to mention, for the deterministic judges: the longest value of its own
    kind of evidence that its text holds, else what it quotes, else what follows its colon; "" when none."""
    low = text.lower()
    held = [v for v in evidence_values(evidence) if len(v.strip()) >= 2 and v.lower() in low]
    if held:
        return max(held, key=lambda v: (len(v), v))
    quoted = re.search(r"'([^']{2,})'|\"([^\"]{2,})\"", text)
    if quoted:
        return quoted.group(1) or quoted.group(2)
    if ":" in text:
        return text.rsplit(":", 1)[1].strip().rstrip("?").strip()
    return ""


def read_questions(source: Source, path: Path, data: bytes, persona: str, period: str,
                   sessions: list[Session]) -> list[Question]:
    doc = need(read_json(source, path, data), dict, source, path, "(file)", "restore the questions file as published")
    if doc.get("persona") != persona:
        raise Refused(source.rel(path), "persona", f"is {doc.get('persona')!r}, not the folder's {persona!r}",
                      "keep each persona's questions in its own folder")
    by_type = need(doc.get("questions"), dict, source, path, "questions", "give the questions keyed by task type")
    by_id = {s.session: s for s in sessions}
    questions, seen = [], set()
    for kind, listed in by_type.items():
        if kind not in TASK_TYPES:
            raise Refused(source.rel(path), f"questions.{kind}", "is not a task type of Memora's",
                          f"use {', '.join(TASK_TYPES)}")
        for i, q in enumerate(need(listed, list, source, path, f"questions.{kind}", "give a list of questions")):
            where = f"questions.{kind}[{i}]"
            q = need(q, dict, source, path, where, "give each question as an object")
            qid = need(q.get("question_id"), str, source, path, f"{where}.question_id", "give the question an id")
            if qid in seen or not re.fullmatch(r"[A-Za-z0-9_.-]{1,120}", qid):
                raise Refused(source.rel(path), f"{where}.question_id", f"{qid!r} is a duplicate or not a plain id",
                              "give each question a unique id of letters, digits, _ . -")
            seen.add(qid)
            text = need(q.get("question"), str, source, path, f"{where}.question", "give the question's text")
            asked = iso_date(q.get("question_date"), source, path, f"{where}.question_date")
            before = [s.session for s in sessions if s.date <= asked]
            if not before:
                raise Refused(source.rel(path), f"{where}.question_date", f"{asked} is before every session",
                              "restore the file as published")
            cited = set()
            for name in ("memory_evidence", "forgetting_evidence"):
                if name in q:
                    cited |= evidence_sessions(need(q[name], dict, source, path, f"{where}.{name}", "give an object"))
            if missing := sorted(cited - set(by_id)):
                raise Refused(source.rel(path), f"{where}.memory_evidence",
                              f"names session {missing[0]}, which is not in conversations/",
                              "restore the persona's sessions as published")
            evaluation = need(q.get("evaluation"), dict, source, path, f"{where}.evaluation", "give an object")
            subs = need(evaluation.get("evaluation_questions"), list, source, path,
                        f"{where}.evaluation.evaluation_questions", "give the sub-questions as a list")
            presence, forgetting = [], []
            for j, sub in enumerate(subs):
                at = f"{where}.evaluation.evaluation_questions[{j}]"
                sub = need(sub, dict, source, path, at, "give each sub-question as an object")
                kind_of = one_of(sub.get("evaluation_type"), EXPECTED, source, path, f"{at}.evaluation_type",
                                 f"use {' or '.join(EXPECTED)}")
                if sub.get("expected_answer") != EXPECTED[kind_of]:
                    raise Refused(source.rel(path), f"{at}.expected_answer",
                                  f"is {sub.get('expected_answer')!r} for a {kind_of} sub-question",
                                  f"expect {EXPECTED[kind_of]!r}: memgrid scores {kind_of} so")
                check = need(sub.get("evaluation_question"), str, source, path, f"{at}.evaluation_question",
                             "give the yes/no question")
                evidence = q.get("memory_evidence" if kind_of == "memory_presence" else "forgetting_evidence", {})
                criterion = SubQuestion(
                    check, (), need(sub.get("evaluation_question_id"), str, source, path,
                                    f"{at}.evaluation_question_id", "give the sub-question an id"),
                    kind_of, named_value(check, evidence))
                (presence if kind_of == "memory_presence" else forgetting).append(criterion)
            evidence, forgotten = (tuple(sorted(by_id[s].id for s in evidence_sessions(q.get(name, {}))))
                                   for name in ("memory_evidence", "forgetting_evidence"))
            questions.append(Question(qid, kind, text, (), max(before), tuple(presence), tuple(forgetting),
                                          evidence, forgotten))
    return questions


def session_files(source: Source, folder: Path) -> list[Path]:
    conversations = source.inside(folder / "conversations")
    files = sorted(p for p in conversations.iterdir() if SESSION_FILE.match(p.name)) if conversations.is_dir() else []
    if not files:
        raise Refused(source.rel(conversations), "(folder)", "holds no session_NNNN.json",
                      "restore the persona's conversations/ as published")
    return [source.inside(p) for p in files]


def read_unit(source: Source, data: Path, period: str, persona: str, suite: str,
              copy_to: Path | None = None) -> UnitPlan:
    """One persona over one period, every file read once: checked, digested and (`copy_to`: the suite's source/
    folder being written) copied unchanged."""
    folder = source.inside(data / period / persona)
    plan = UnitPlan(period, persona, suite, Unit(persona, persona, period))  # oracle: what memory_evidence cites

    def take(path: Path) -> bytes:
        raw = path.read_bytes()
        rel = path.relative_to(data).as_posix()
        plan.files[rel] = sha256_bytes(raw)
        if copy_to is not None:
            (copy_to / rel).parent.mkdir(parents=True, exist_ok=True)
            (copy_to / rel).write_bytes(raw)
        return raw

    sessions = [read_session(source, p, take(p), persona, period) for p in session_files(source, folder)]
    questions_path = source.inside(folder / f"evaluation_questions_{persona}.json")
    if not questions_path.is_file():
        raise Refused(source.rel(questions_path), "(file)", "is missing", "restore the persona's questions file")
    plan.unit.records = sorted(sessions, key=lambda s: s.session)
    plan.unit.questions = read_questions(source, questions_path, take(questions_path), persona, period,
                                         plan.unit.records)
    return plan


def chosen(data: Path, periods: tuple[str, ...] | None, personas: tuple[str, ...] | None) -> list[tuple[str, str]]:
    """(period, persona) of the checkout, cut to --periods / --personas; a name it does not hold is refused."""
    present = {p: sorted(d.name for d in (data / p).iterdir() if d.is_dir()) for p in PERIODS if (data / p).is_dir()}
    for name in periods or ():
        if name not in present:
            raise UserError(f"--periods: '{name}' is not a period of {data} — fix: use {', '.join(present)}")
    every = sorted({x for names in present.values() for x in names})
    for name in personas or ():
        if name not in every:
            raise UserError(f"--personas: '{name}' is not a persona of {data} — fix: use {', '.join(every)}")
    return [(p, x) for p in (periods or tuple(present)) for x in present[p] if not personas or x in personas]


def import_memora(path: Path, project: Path, suite: str, *, dry_run: bool = False, periods=None, personas=None,
                  log=None) -> ImportResult:
    log = log or (lambda message: print(message, file=sys.stderr, flush=True))
    into = new_suite_folder(project, suite, "Memora")
    source, data = data_root(path)
    units = chosen(data, periods, personas)
    result = ImportResult()
    staging = project / "tasks" / f".memgrid-import-{suite}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for n, (period, persona) in enumerate(units, 1):
            log(f"[{n}/{len(units)}] reading {period}/{persona}")
            try:
                plan = read_unit(source, data, period, persona, suite, None if dry_run else staging / "source")
            except Refused as e:
                result.refusals.append(Refusal(data / period / persona, str(e)))
                shutil.rmtree(staging / "source" / period / persona, ignore_errors=True)
                continue
            result.plans.append(plan)
        if result.plans and not dry_run:
            result.created = write_suite(staging, into, suite, source.origin(REPOSITORY), result.plans)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return result


def write_suite(staging: Path, into: Path, suite: str, origin: dict, plans: list[UnitPlan]) -> list[str]:
    """suite.yaml and provenance.json beside source/, then the whole folder renamed into place."""
    provenance = {"source": origin, "format": "memora",
                  "units": [{"period": p.period, "persona": p.persona, "sessions": len(p.unit.records),
                             "questions": len(p.unit.questions)} for p in plans],
                  "files": {rel: digest for p in plans for rel, digest in sorted(p.files.items())}}
    doc = {"name": suite, "title": f"Memora from {origin['repository']}, hosted as published by memgrid task import "
                                   "--format memora",
           "protocol": MemoraFormat.protocol, "source": {"format": "memora", **origin}}
    staging.mkdir(parents=True, exist_ok=True)
    (staging / "suite.yaml").write_text(
        "# Memora as published: source/<period>/<persona>/ holds its files unchanged; provenance.json records\n"
        "# every file's sha256 and the personas and periods hosted (runner/sources/memora.py).\n"
        + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100))
    (staging / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n")
    staging.rename(into)
    return [f"tasks/{suite}/suite.yaml", f"tasks/{suite}/provenance.json",
            f"tasks/{suite}/source/ ({len(provenance['files'])} files)"]


def provenance_of(folder: Path) -> dict:
    """The suite's provenance.json, read once while it is unchanged: planning asks for it per persona and period,
    and a whole Memora's is 27,644 digests."""
    path = folder / "provenance.json"
    try:
        stat = path.stat()
    except OSError as e:
        raise SpecError(path, "files", f"cannot be read ({e})",
                        "import Memora again (memgrid task import --format memora)") from None
    return _provenance(path, stat.st_mtime_ns, stat.st_size)


@cache
def _provenance(path: Path, mtime_ns: int, size: int) -> dict:
    return read_provenance(path, {"files": dict, "units": list}, "Memora", MemoraFormat.name)


@cache
def hosted_unit(folder: Path, persona: str, period: str) -> Unit:
    """A hosted persona over a period, read from the suite's source/: each of its files must be the one imported
    (its sha256 in provenance.json), and none may be missing or added."""
    provenance = provenance_of(folder)
    prefix = f"{period}/{persona}/"
    recorded = {rel: d for rel, d in provenance["files"].items() if rel.startswith(prefix)}
    if not recorded:
        raise SpecError(folder / "provenance.json", "units", f"hosts no {period}/{persona}",
                        f"use a persona and period it hosts (memgrid task list --suite {folder.name})")
    source = Source(folder / "source", "hosted Memora suite")
    try:  # a folder linked out of the suite is refused, never read
        unit_dir = source.inside(folder / "source" / period / persona, "units")
    except Refused as e:
        raise SpecError(folder / "source" / period / persona, "(folder)", e.problem,
                        "restore the suite as imported: import Memora again into a new suite") from None
    present = {p.relative_to(folder / "source").as_posix() for p in unit_dir.rglob("*") if p.is_file() or p.is_symlink()}
    hosted_files(folder / "source", recorded, present, "Memora",
                 "restore the suite as imported: import Memora again into a new suite")
    try:
        return read_unit(source, folder / "source", period, persona, folder.name).unit
    except Refused as e:  # the digests matched, so only a change to this reader can refuse a file it imported
        raise SpecError(folder / "source" / period / persona, "(file)", str(e), "import Memora again") from None


class MemoraFormat(SourceFormat):
    name = "memora"
    protocol = "personal"
    reader_version = 1
    # the reward Memora's card defines: reference quality b and anchor a (results/reward.py)
    reward = RewardMapping(reference=0.3712215103709065, anchor=20)
    # Memora's published FAMA for remembering questions, weekly / monthly / quarterly (percent).
    published = {"LangMem": (71, 42, 39), "A-Mem": (72, 42, 41), "Mem0": (40, 21, 20),
                 "frontier model, full context": (25, 20, 23)}
    published_about = "remembering FAMA %"
    published_source = "Memora"
    answer_prompt = ANSWER_PROMPT
    history_prompt = HISTORY_PROMPT
    about = "a checkout of github.com/geniesinc/Memora (or its data/ folder), hosted in the personal protocol"
    options = {"periods": "comma-separated periods to import (weekly, monthly, quarterly; default: every one in PATH).",
               "personas": "comma-separated personas to import (default: every one in PATH)."}
    export_about = ("a personal run as the eval_report_*.json tree Memora's evals/model_eval/aggregate_results.py "
                    "reads")

    def import_source(self, path: Path, project: Path, suite: str, *, dry_run: bool = False, **options) -> ImportResult:
        return import_memora(path, project, suite, dry_run=dry_run, **options)

    def hosted_units(self, folder: Path) -> list[tuple[str, str]]:
        units: dict[str, list[str]] = {}
        for u in provenance_of(folder)["units"]:
            units.setdefault(u["persona"], []).append(f"{u['period']} ({u['sessions']} sessions, "
                                                      f"{u['questions']} questions)")
        return [(persona, "Memora persona: " + ", ".join(periods)) for persona, periods in sorted(units.items())]

    def unit_conditions(self, folder: Path) -> dict[str, list[str]]:
        periods: dict[str, list[str]] = {}
        for u in provenance_of(folder)["units"]:
            periods.setdefault(u["persona"], []).append(u["period"])
        return periods

    def personal_unit(self, folder: Path, unit_id: str, condition: str) -> Unit:
        return hosted_unit(folder, unit_id, condition)

    def unit_files(self, folder: Path, unit_id: str, condition: str) -> dict[str, str]:
        hosted_unit(folder, unit_id, condition)  # refuses a changed, added or missing file by name
        return {rel: d for rel, d in provenance_of(folder)["files"].items() if rel.startswith(f"{condition}/{unit_id}/")}

    def grid_example(self, folder: Path, suite: str) -> dict | None:
        hosted = {u["period"] for u in provenance_of(folder)["units"]}
        return {"name": suite, "protocol": self.protocol, "suite": suite, "tasks": "all",
                "conditions": [p for p in PERIODS if p in hosted], "arms": ["bare", "full_context", "oracle_memory", "recall"],
                "agents": ["extractive"], "seeds": 1}

    def export(self, run_dir: Path, output: Path, log=print) -> ExportResult:
        from runner.sources.memora_export import export_run  # the ledger's reader, only for an export

        return export_run(run_dir, output, log)

    def closing_lines(self, result: ImportResult, suite: str, dry_run: bool) -> list[str]:
        if not result.plans or dry_run:
            return []
        return [f"suite {suite} runs in the {self.protocol} protocol (persons = personas, conditions = periods); every "
                f"file's sha256 is in tasks/{suite}/provenance.json"]
