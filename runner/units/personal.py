"""A person's records and the questions asked of them: what the personal protocol runs, whoever made them
(memgrid's generator, protocols/personal/corpus.py, or a hosted benchmark's format under runner/sources/)."""

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
    """How a model is asked one question over the memories released to it: a benchmark's own answer prompt as its
    code sends it (Memora's agent track, `generate_answer`), or memgrid's documented default for generated persons.
    `user` is filled with str.format (`{question}`, `{memories}`); each memory is `memory_line` filled with `{n}` (1
    up) and `{memory}` (the record's text), joined by newlines. With no memory at all, `no_memories` is the answer and
    no model is asked, as its publisher's code does; None: the model is asked anyway. The request is an OpenAI-
    compatible chat completion (`settings` its sampling fields), the shape the publisher's code sends."""
    name: str
    system: str
    user: str
    memory_line: str
    settings: tuple[tuple[str, object], ...]  # ("max_tokens", 500), ("temperature", 0.7): sent as given
    source: str  # the file and commit it is copied from, or "memgrid"
    no_memories: str | None = None

    def request(self, model: str, question: str, memories: list[str]) -> dict | None:
        """The request body the publisher's code would send for this question and these memories; None when it sends
        none (no memory, and `no_memories` answers)."""
        if not memories and self.no_memories is not None:
            return None
        lines = "\n".join(self.memory_line.format(n=n, memory=m) for n, m in enumerate(memories, 1))
        return {"model": model, "messages": [{"role": "system", "content": self.system},
                                             {"role": "user", "content": self.user.format(question=question,
                                                                                          memories=lines)}],
                **dict(self.settings)}

    def item_pattern(self) -> str:
        """A regular expression matching the start of each memory's line (a line start, the line's text up to the
        memory, its number any digits): how a reader of the prompt, the scripted model, tells the memories apart."""
        import re

        head = self.memory_line.split("{memory}", 1)[0]
        return "^" + re.escape(head).replace(re.escape("{n}"), r"\d+")

    @property
    def sha256(self) -> str:
        """What identifies the prompt: its text and settings, never the model (recorded beside it)."""
        return sha256_json({"system": self.system, "user": self.user, "memory_line": self.memory_line,
                            "settings": [list(s) for s in self.settings], "no_memories": self.no_memories})


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
