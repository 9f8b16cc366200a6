"""A person's records and the questions asked of them: what the personal protocol runs, whoever made them
(memgrid's generator, protocols/personal/corpus.py, or a hosted benchmark's format under runner/sources/)."""

from collections.abc import Sequence
from dataclasses import dataclass, field

from runner.digest import sha256_json


@dataclass(frozen=True)
class Record:
    id: str
    person: str
    session: int
    date: str
    text: str  # "user: ...\nassistant: ..."
    user: str
    assistant: str

    def turns(self) -> tuple[tuple[str, str], ...]:
        """(role, text) in order: what the arm's ingest is given of the record."""
        return (("user", self.user), ("assistant", self.assistant))


@dataclass(frozen=True)
class Criterion:
    value: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class SubQuestion(Criterion):
    """A yes/no question about the answer, as a hosted benchmark states its criteria (Memora's evaluation
    questions): `value` is its text, which model judges are asked as it is; presence ones expect yes, forgetting
    ones no. The deterministic judges look for `named` instead: the value the question names ("" when it names
    none they can find, and they give no verdict)."""
    id: str = ""
    evaluation_type: str = ""  # memory_presence or forgetting_absence
    named: str = ""


@dataclass(frozen=True)
class Question:
    id: str
    kind: str  # remembering, reasoning, recommending
    text: str
    attributes: tuple[str, ...]
    cutoff_session: int
    presence: tuple[Criterion, ...]  # the answer should mention each
    forgetting: tuple[Criterion, ...]  # the answer should not mention any
    evidence: tuple[str, ...]  # the records that state the current values
    forgotten: tuple[str, ...] = ()  # the records that state the values the answer should no longer use
    # The evidence as the source lists it, entry for entry, where a benchmark's own evidence recall counts those
    # (LoCoMo's dia_ids, a composite "D8:6; D9:17" kept whole). Out of repr: units without it keep their digest.
    evidence_entries: tuple[str, ...] = field(default=(), repr=False)


@dataclass
class Unit:
    """One person over one horizon (a hosted benchmark's period): the records and the questions (the answer key)."""
    person: str
    name: str
    horizon: str
    records: list[Record] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    # The roles whose turns are what the persons asked about said themselves: Memora's user (its assistant's words
    # are not the persona's); both of LoCoMo's speakers, each a person its questions ask about.
    speakers: tuple[str, ...] = ("user",)
    # Whether the benchmark asks for a short answer (LoCoMo's QA prompt: "a short phrase"): the answer request says so,
    # and the extractive answerer then answers with its best statement alone.
    short_answers: bool = False
    # Whether an oracle memory gives each question exactly the records that question cites (LoCoMo: each question names
    # its own evidence turns), rather than every record any question cites (Memora: the records stating the person's
    # current facts, which every question about them shares).
    oracle_per_question: bool = False

    @property
    def id(self) -> str:
        return f"{self.person}-{self.horizon}"

    def oracle_evidence(self) -> list[str]:
        """What an oracle memory holds: the records the questions cite as stating what the answer should hold (each
        question is given all of them, or only its own with oracle_per_question)."""
        return sorted({rid for q in self.questions for rid in q.evidence})


def unit_digest(unit: Unit) -> str:
    """The data of a person over a horizon (records and answer key), apart from the code that made it."""
    return sha256_json({"records": [vars(r) for r in unit.records], "questions": [repr(q) for q in unit.questions],
                        **({"speakers": list(unit.speakers)} if unit.speakers != ("user",) else {}),
                        **({"short_answers": True} if unit.short_answers else {}),
                        **({"oracle_per_question": True} if unit.oracle_per_question else {}),
                        **({"evidence_entries": {q.id: list(q.evidence_entries) for q in unit.questions}}
                           if any(q.evidence_entries for q in unit.questions) else {})})


@dataclass(frozen=True)
class AnswerJudgePrompt:
    """A published prompt that asks a model whether an answer is right against the gold answer (the vendors' J on
    LoCoMo): its text as published, where it is from, and the model its publisher asked. The user template is filled
    with str.format as its publisher's code fills it, `fields` naming its placeholders for the question, the gold
    answer and the answer judged; the reply is JSON with "label" CORRECT or WRONG (read_label)."""
    name: str
    user: str
    fields: tuple[str, str, str]
    source: str  # the file and commit it is copied from
    model: str  # the model its publisher asked
    system: str | None = None  # None: the prompt is one user message, as published
    json_reply: bool = False  # asked with response_format json_object, as published

    def messages(self, question: str, gold: str, answer: str) -> list[dict]:
        user = self.user.format(**dict(zip(self.fields, (question, gold, answer))))
        return ([{"role": "system", "content": self.system}] if self.system is not None else []) + \
            [{"role": "user", "content": user}]

    @property
    def sha256(self) -> str:
        return sha256_json({"system": self.system, "user": self.user, "json_reply": self.json_reply})


@dataclass(frozen=True)
class AnswerPrompt:
    """How a model is asked one question over the records released to it, as a benchmark's own code asks it (Memora's
    agent track over the memories a search returned, its model track over the whole history) or memgrid's documented
    default for generated persons. The request is an OpenAI-compatible chat completion, the shape the publishers'
    code sends, `settings` its sampling fields sent as given. With no record at all, `no_memories` is the answer and no
    model is asked, as its publisher's code does; None: the model is asked anyway."""
    name: str
    system: str
    user: str
    settings: tuple[tuple[str, object], ...]  # ("max_tokens", 500), ("temperature", 0.7): sent as given
    source: str  # the file and commit it is copied from, or "memgrid"
    no_memories: str | None = None

    def request(self, model: str, question: Question, records: Sequence[Record]) -> dict | None:
        """The request body the publisher's code would send for this question and these records; None when it sends
        none (no record, and `no_memories` answers)."""
        raise NotImplementedError

    def unasked(self, question: Question) -> str:
        """The answer recorded where request() sends none (the publisher's code asks no model there)."""
        return self.no_memories or ""

    def reading(self) -> dict:
        """How a reader of the request, the scripted model, finds its parts: `item` (a regular expression matching the
        start of each record's part of the last user message), `question` (one whose group 1 is the question; absent:
        the text before the first item) and `statement` (the lines that state what the person said)."""
        raise NotImplementedError

    def cut(self, model: str, question: Question, records: Sequence[Record]) -> str | None:
        """Why the publisher's code would not send these records whole to this model (it would cut them to fit), or
        None: it sends them whole, as memgrid does."""
        return None

    def body(self, model: str, user: str) -> dict:
        return {"model": model, "messages": [{"role": "system", "content": self.system},
                                             {"role": "user", "content": user}], **dict(self.settings)}

    def fields(self) -> dict:
        """What else fills the request besides system, user and settings (a layout, a limit): part of its identity."""
        return {}

    @property
    def sha256(self) -> str:
        """What identifies the prompt: its text, layout and settings, never the model (recorded beside it)."""
        return sha256_json({"system": self.system, "user": self.user, **self.fields(),
                            "settings": [list(s) for s in self.settings], "no_memories": self.no_memories})


@dataclass(frozen=True)
class MemoriesPrompt(AnswerPrompt):
    """The question over a numbered list of the released records: `user` is filled with str.format (`{question}`,
    `{memories}`); each record is `memory_line` filled with `{n}` (1 up) and `{memory}` (its text), joined by newlines."""
    memory_line: str = "{n}. {memory}"

    def request(self, model: str, question: Question, records: Sequence[Record]) -> dict | None:
        if not records and self.no_memories is not None:
            return None
        lines = "\n".join(self.memory_line.format(n=n, memory=r.text) for n, r in enumerate(records, 1))
        return self.body(model, self.user.format(question=question.text, memories=lines))

    def reading(self) -> dict:
        import re

        head = self.memory_line.split("{memory}", 1)[0]
        return {"item": "^" + re.escape(head).replace(re.escape("{n}"), r"\d+"), "statement": "^user: "}

    def fields(self) -> dict:
        return {"memory_line": self.memory_line}


# Anthropic's Messages API requires max_tokens; a publisher's request that sets none (Memora's model track) is sent
# with this cap, said in the lock and docs/agents.md.
MESSAGES_MAX_TOKENS = 4096


def as_messages_request(body: dict) -> dict:
    """An OpenAI-compatible chat completion as the Anthropic Messages request it amounts to: the system messages as
    `system`, the others as they are, the sampling kept (`n` 1 is Messages' only answer count), max_tokens the
    publisher's or MESSAGES_MAX_TOKENS."""
    system = [m["content"] for m in body["messages"] if m["role"] == "system"]
    rest = [m for m in body["messages"] if m["role"] != "system"]
    if not rest:  # LoCoMo's gpt-3.5 shape: its one message is the system's, which Messages cannot send alone
        rest, system = [{"role": "user", "content": "\n\n".join(system)}], []
    if body.get("n", 1) != 1:
        raise ValueError(f"a request for {body['n']} answers has no Messages form")
    out = {k: v for k, v in body.items() if k not in ("messages", "n")}
    out.setdefault("max_tokens", MESSAGES_MAX_TOKENS)
    return {**out, **({"system": "\n\n".join(system)} if system else {}), "messages": rest}


def read_label(text: str | None) -> tuple[bool | None, str]:
    """(CORRECT: True, WRONG: False, else None; what the reply said). Valid only as the JSON object the prompts ask
    for, code fences allowed: a reply that is not is an invalid verdict, never a label guessed from its words."""
    import json

    body = (text or "").strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    try:
        reply = json.loads(body)
    except json.JSONDecodeError:
        return None, f"malformed reply (not JSON): {body[:60]!r}"
    label = reply.get("label") if isinstance(reply, dict) else None
    verdict = {"CORRECT": True, "WRONG": False}.get(label.strip().upper() if isinstance(label, str) else None)
    if verdict is None:
        return None, f"malformed reply (label is {label!r}, not CORRECT or WRONG)"
    return verdict, f"labelled {label.strip().upper()}: {str(reply.get('reasoning', ''))[:120]}"
