"""LoCoMo (github.com/snap-research/LoCoMo) as published, hosted in the personal protocol.

LoCoMo's `data/locomo10.json` is a list of samples, each a long conversation between two people and the questions
asked of it: `sample_id`; `conversation` with `speaker_a`, `speaker_b`, and per session N `session_N_date_time`
("1:56 pm on 8 May, 2023") and `session_N`, its turns in order (`speaker`, `dia_id` "D<session>:<turn>", `text`;
an image turn adds `img_url` and `blip_caption`); `qa`, each with `question`, `answer`, `evidence` (dia_ids) and
`category` 1-5 (category 5, adversarial, carries `adversarial_answer` and mostly no `answer`). memgrid's personal
protocol has the same parts: persons = samples (one condition, `published`: a sample is asked once, after its last
session), records = turns, questions with their answer and evidence.

A turn becomes one record whose text is the one LoCoMo's own retrieval prompts show of it
(task_eval/gpt_utils.py, rag_mode dialog): `<speaker> said, "<text>"`, and for an image turn ` and shared
<blip_caption>` after it (the image itself is not hosted: no answerer of LoCoMo's sees it). The arm's ingest gets
the turn with role `user` for speaker_a and `assistant` for speaker_b (the roles its input format knows); the text
names the speaker.

The import copies locomo10.json unchanged into tasks/<suite>/source/ and records the checkout's commit and the
file's sha256 in tasks/<suite>/provenance.json; a run reads the suite from there (`hosted_unit`), the file checked
against its digest, so a hosted sample is the one imported or it is refused by name. Every sample is read at
import; a malformed one is refused in one line (file, field, fix) and the others go on.
"""

import json
import re
import shutil
import string
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from pathlib import Path

import numpy
from nltk.stem import PorterStemmer

from runner.digest import sha256_bytes, sha256_json
from runner.errors import SpecError, UserError
from runner.plan.spec import project_root
from runner.units.personal import AnswerJudgePrompt, AnswerPrompt, Criterion, Question, Record, Unit
from runner.sources.base import (ExportResult, ImportResult, Refusal, Refused, Source, SourceFormat, hosted_files,
                                 new_suite_folder, read_provenance, write_hosted_suite)

REPOSITORY = "https://github.com/snap-research/LoCoMo"
DATA_FILE = "locomo10.json"
CONDITION = "published"  # a sample has no periods: its questions are asked once, after its last session
# The categories as LoCoMo's own scoring names them (task_eval/evaluation.py, eval_question_answering's comments);
# other readers label 1 and 4 the other way round (mem0 issue 2609, LoCoMo issue 29).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ROLES = ("user", "assistant")  # speaker_a, speaker_b as the arm's ingest input names them
SESSION_KEY = re.compile(r"^session_(\d+)$")
DIA_ID = re.compile(r"^D(\d+):(\d+)$")
CITED = re.compile(r"D\d+:\d+")  # a dia_id inside an evidence entry ("D8:6; D9:17" cites two)
DATE_TIME = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
SAMPLE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


@dataclass(frozen=True)
class Turn(Record):
    """One turn of a LoCoMo conversation as one record."""
    dia_id: str = ""
    role: str = "user"
    date_time: str = ""  # its session's session_N_date_time as published ("1:56 pm on 8 May, 2023")

    def turns(self) -> tuple[tuple[str, str], ...]:
        return ((self.role, self.text),)


@dataclass
class SamplePlan:
    """A sample as it is (or, on a dry run, would be) hosted."""
    sample_id: str
    suite: str
    unit: Unit
    sessions: int
    published: str  # the sha256 of the sample as published: its identity, apart from the other samples of the file
    uncited: list[str] = field(default_factory=list)  # evidence entries that name no turn of the sample as written

    def line(self) -> str:
        counts = {n: sum(q.kind == kind_of(n) for q in self.unit.questions) for n in CATEGORIES}
        return (f"import {self.sample_id} -> tasks/{self.suite}/: {self.sessions} sessions, {len(self.unit.records)} "
                f"turns, {len(self.unit.questions)} questions (category " + ", ".join(
                    f"{n} {c}" for n, c in counts.items()) + ")" + (
                    f"; {len(self.uncited)} evidence entries name no turn as written ({', '.join(self.uncited)}): "
                    "oracle_memory releases the turns found in them" if self.uncited else ""))

    def unisolated_line(self) -> None:
        return None  # the answer is scored from its text alone; no code of the agent's runs outside its container


def kind_of(category: int) -> str:
    """A question's kind as reports show it: LoCoMo's category by number and name ("1 multi-hop")."""
    return f"{category} {CATEGORIES[category]}"


def record_id(sample_id: str, dia_id: str) -> str:
    """A turn's record id, a file name everywhere it is one ("conv-26-D1-3")."""
    return f"{sample_id}-{dia_id.replace(':', '-')}"


def data_file(path: Path) -> tuple[Source, Path]:
    """The checkout (or the json file alone) and locomo10.json: PATH may be either."""
    path = path.resolve()
    if path.is_file():
        root = path.parent.parent if path.parent.name == "data" and (path.parent.parent / ".git").exists() else path.parent
        return Source(root, "LoCoMo"), path
    if (path / "data" / DATA_FILE).is_file():
        return Source(path, "LoCoMo"), path / "data" / DATA_FILE
    raise UserError(f"{path}: holds no LoCoMo data (no data/{DATA_FILE}) — fix: give a checkout of "
                    f"github.com/snap-research/LoCoMo or its data/{DATA_FILE}")


def need(value, kind, where: str, name: str, fix: str):
    """`value` when it is of `kind`, else the sample is refused naming the field."""
    if not isinstance(value, kind) or isinstance(value, bool):
        shown = "missing" if value is None else f"{type(value).__name__} {json.dumps(value)[:60]}"
        raise Refused(where, name, f"is {shown}", fix)
    return value


def session_date(value, where: str, name: str) -> str:
    text = need(value, str, where, name, "give the session's date and time as LoCoMo writes it (1:56 pm on 8 May, 2023)")
    try:
        return datetime.strptime(text, DATE_TIME).date().isoformat()
    except ValueError:
        raise Refused(where, name, f"{text!r} is not a date and time as LoCoMo writes them",
                      "write it as 1:56 pm on 8 May, 2023") from None


def read_turns(sample_id: str, conversation: dict, where: str) -> tuple[list[Turn], int]:
    speakers = {need(conversation.get(k), str, where, f"conversation.{k}", "name the speaker"): role
                for k, role in zip(("speaker_a", "speaker_b"), ROLES)}
    sessions = sorted(int(m.group(1)) for k in conversation if (m := SESSION_KEY.match(k)))
    if not sessions:
        raise Refused(where, "conversation", "holds no session_N", "restore the sample's sessions as published")
    turns, seen = [], set()
    for n in sessions:
        at = f"conversation.session_{n}"
        day = session_date(conversation.get(f"session_{n}_date_time"), where, f"{at}_date_time")
        for i, turn in enumerate(need(conversation[f"session_{n}"], list, where, at, "give the session's turns as a list")):
            t = f"{at}[{i}]"
            turn = need(turn, dict, where, t, "give each turn as an object with speaker, dia_id and text")
            speaker = need(turn.get("speaker"), str, where, f"{t}.speaker", "name one of the two speakers")
            if speaker not in speakers:
                raise Refused(where, f"{t}.speaker", f"is {speaker!r}, neither speaker_a nor speaker_b",
                              "restore the turn as published")
            dia_id = need(turn.get("dia_id"), str, where, f"{t}.dia_id", "give the turn's dia_id")
            found = DIA_ID.match(dia_id)
            if not found or int(found.group(1)) != n or dia_id in seen:
                raise Refused(where, f"{t}.dia_id", f"{dia_id!r} is not D{n}:<turn> or is repeated",
                              "restore the turn as published")
            seen.add(dia_id)
            said = f'{speaker} said, "{need(turn.get("text"), str, where, f"{t}.text", "give the turn text")}"'
            if "blip_caption" in turn:
                said += " and shared " + need(turn["blip_caption"], str, where, f"{t}.blip_caption", "give the caption")
            role = speakers[speaker]
            turns.append(Turn(record_id(sample_id, dia_id), sample_id, n, day, said,
                              said if role == "user" else "", said if role == "assistant" else "", dia_id, role,
                              conversation[f"session_{n}_date_time"]))
    return turns, len(sessions)


def read_questions(sample_id: str, qa, turns: list[Turn], where: str) -> tuple[list[Question], list[str]]:
    by_dia = {t.dia_id: t.id for t in turns}
    last = max(t.session for t in turns)
    questions, uncited = [], []
    for i, item in enumerate(need(qa, list, where, "qa", "give the sample's questions as a list")):
        at = f"qa[{i}]"
        item = need(item, dict, where, at, "give each question as an object")
        text = need(item.get("question"), str, where, f"{at}.question", "give the question's text")
        category = item.get("category")
        if category not in CATEGORIES or isinstance(category, bool):
            raise Refused(where, f"{at}.category", f"is {category!r}", "use one of LoCoMo's categories 1-5")
        evidence = need(item.get("evidence"), list, where, f"{at}.evidence", "list the dia_ids the answer rests on")
        cited = []
        for e in evidence:
            named = CITED.findall(need(e, str, where, f"{at}.evidence", "give each dia_id as text"))
            if e not in by_dia:
                uncited.append(e)
            cited += [by_dia[d] for d in named if d in by_dia]
        if category == 5:  # the answer should say it is not known; it should not give the adversarial answer
            trap = need(item.get("adversarial_answer"), str, where, f"{at}.adversarial_answer",
                        "give the adversarial answer a category-5 question carries")
            presence, forgetting = (), (Criterion(trap),)
        else:
            answer = item.get("answer")
            answer = str(need(answer, (str, int, float), where, f"{at}.answer", "give the gold answer"))
            presence, forgetting = (Criterion(answer),), ()
        questions.append(Question(f"{sample_id}-q{i + 1:04d}", kind_of(category), text, (), last, presence,
                                  forgetting, tuple(dict.fromkeys(cited)), evidence_entries=tuple(evidence)))
    return questions, uncited


def read_sample(sample, index: int, file: str, suite: str) -> SamplePlan:
    where = f"{file}[{index}]"
    sample = need(sample, dict, where, "(sample)", "restore the sample as published")
    sample_id = need(sample.get("sample_id"), str, where, "sample_id", "give the sample its id")
    if not SAMPLE_ID.match(sample_id):
        raise Refused(where, "sample_id", f"{sample_id!r} is not a plain id", "use letters, digits, _ . - (1-64)")
    where = f"{file} sample {sample_id}"
    conversation = need(sample.get("conversation"), dict, where, "conversation", "give the sample's conversation")
    turns, sessions = read_turns(sample_id, conversation, where)
    questions, uncited = read_questions(sample_id, sample.get("qa"), turns, where)
    names = f"{conversation['speaker_a']} and {conversation['speaker_b']}"
    return SamplePlan(sample_id, suite, Unit(sample_id, names, CONDITION, turns, questions, ROLES,
                                                   short_answers=True, oracle_per_question=True), sessions,
                      sha256_json(sample), uncited)


def read_samples(raw: bytes, file: str, suite: str) -> tuple[list[SamplePlan], list[tuple[str, str]]]:
    """Every sample of the file: those read, and (sample, why) for those refused."""
    try:
        doc = json.loads(raw)
    except ValueError as e:
        raise UserError(f"{file}: is not JSON ({e}) — fix: restore the file as published") from None
    if not isinstance(doc, list):
        raise UserError(f"{file}: is {type(doc).__name__}, not a list of samples — fix: restore the file as published")
    plans, refused, seen = [], [], set()
    for i, sample in enumerate(doc):
        try:
            plan = read_sample(sample, i, file, suite)
            if plan.sample_id in seen:
                raise Refused(file, f"[{i}].sample_id", f"{plan.sample_id!r} is repeated", "give each sample its own id")
        except Refused as e:
            name = sample.get("sample_id") if isinstance(sample, dict) and isinstance(sample.get("sample_id"), str) else f"[{i}]"
            refused.append((name, str(e)))
            continue
        seen.add(plan.sample_id)
        plans.append(plan)
    return plans, refused


def import_locomo(path: Path, project: Path, suite: str, *, dry_run: bool = False, log=None) -> ImportResult:
    log = log or (lambda message: print(message, file=sys.stderr, flush=True))
    into = new_suite_folder(project, suite, "LoCoMo")
    source, file = data_file(path)
    source.inside(file)
    raw = file.read_bytes()
    log(f"reading {source.rel(file)} ({len(raw):,} bytes)")
    plans, refused = read_samples(raw, source.rel(file), suite)
    result = ImportResult(plans, [Refusal(Path(name), why) for name, why in refused])
    if plans and not dry_run:
        staging = project / "tasks" / f".memgrid-import-{suite}"
        shutil.rmtree(staging, ignore_errors=True)
        try:
            (staging / "source").mkdir(parents=True)
            (staging / "source" / DATA_FILE).write_bytes(raw)
            origin = source.origin(REPOSITORY)
            provenance = {"source": origin, "format": LocomoFormat.name,
                          "units": [{"sample_id": p.sample_id, "sessions": p.sessions, "turns": len(p.unit.records),
                                     "questions": len(p.unit.questions)} for p in plans],
                          "files": {DATA_FILE: sha256_bytes(raw)}}
            doc = {"name": suite, "title": f"LoCoMo from {origin['repository']}, hosted as published by memgrid task "
                                           "import --format locomo",
                   "protocol": LocomoFormat.protocol, "source": {"format": LocomoFormat.name, **origin}}
            write_hosted_suite(staging, "# LoCoMo as published: source/locomo10.json unchanged; provenance.json records "
                               "its sha256\n# and the samples hosted (runner/sources/locomo.py).\n", doc, provenance)
            staging.rename(into)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        result.created = [f"tasks/{suite}/suite.yaml", f"tasks/{suite}/provenance.json",
                          f"tasks/{suite}/source/{DATA_FILE}"]
    return result


def provenance_of(folder: Path) -> dict:
    return read_provenance(folder / "provenance.json", {"files": dict, "units": list}, "LoCoMo", LocomoFormat.name)


def source_listing(folder: Path) -> frozenset[str]:
    """The files under the suite's source/, as paths relative to it."""
    root = folder / "source"
    return frozenset(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink()) \
        if root.is_dir() else frozenset()


def hosted_data(folder: Path, present: frozenset[str]) -> tuple[bytes, set[str]]:
    """locomo10.json as imported (every file of source/ checked against provenance.json) and the samples hosted."""
    provenance = provenance_of(folder)
    raw = hosted_files(folder / "source", provenance["files"], set(present), "LoCoMo",
                       "restore the suite as imported: import LoCoMo again into a new suite")[DATA_FILE]
    return raw, {u["sample_id"] for u in provenance["units"]}


def hosted_samples(folder: Path) -> dict[str, tuple[Unit, str]]:
    """The suite's samples as hosted, by id, each with the sha256 of the sample as published: the folder checked
    against provenance.json first (read again only when its listing or the file changes: a run asks for each sample
    many times, and the file is 2.8 MB)."""
    try:
        stat = (folder / "source" / DATA_FILE).stat()
    except OSError:
        stat = None
    return _hosted_samples(folder, source_listing(folder), stat.st_mtime_ns if stat else 0, stat.st_size if stat else 0)


@cache
def _hosted_samples(folder: Path, present: frozenset[str], mtime_ns: int, size: int) -> dict[str, tuple[Unit, str]]:
    raw, hosted = hosted_data(folder, present)
    plans, refused = read_samples(raw, f"tasks/{folder.name}/source/{DATA_FILE}", folder.name)
    if bad := [why for name, why in refused if name in hosted]:  # the digest matched: only a change of this reader
        raise SpecError(folder / "source" / DATA_FILE, "(file)", bad[0], "import LoCoMo again")
    return {p.sample_id: (p.unit, p.published) for p in plans if p.sample_id in hosted}


def published_qa(suite: str) -> dict[str, list[dict]]:
    """Each hosted sample's qa items as published, from this checkout's tasks/<suite>/ (checked as a run checks it):
    what an export copies its items from."""
    folder = project_root() / "tasks" / suite
    raw, hosted = hosted_data(folder, source_listing(folder))
    return {s["sample_id"]: s["qa"] for s in json.loads(raw) if s.get("sample_id") in hosted}


def hosted_unit(folder: Path, sample_id: str) -> tuple[Unit, str]:
    samples = hosted_samples(folder)
    if sample_id not in samples:
        raise SpecError(folder / "provenance.json", "units", f"hosts no sample {sample_id}",
                        f"use a sample it hosts (memgrid task list --suite {folder.name})")
    return samples[sample_id]


# LoCoMo's own answer scoring, task_eval/evaluation.py at 3eb6f2c (eval_question_answering and what it calls), rule for
# rule: tests/test_locomo_score.py holds values its own function gives on answers of ours.
ABSTAINS = ("no information available", "not mentioned")  # a category-5 answer that says so is right
STEMMER = PorterStemmer()  # NLTK's default mode, as evaluation.py's module-level `ps`


def normalize_answer(text: str) -> str:
    """evaluation.normalize_answer: commas dropped, lower case, punctuation dropped, a/an/the/and dropped, spaces
    collapsed."""
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the|and)\b", " ", text).split())


def token_f1(prediction: str, gold: str) -> float:
    """evaluation.f1_score: F1 over Porter-stemmed normalized tokens."""
    stem = STEMMER.stem
    predicted = [stem(w) for w in normalize_answer(prediction).split()]
    wanted = [stem(w) for w in normalize_answer(gold).split()]
    same = sum((Counter(predicted) & Counter(wanted)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(wanted)
    return 2 * precision * recall / (precision + recall)


def locomo_f1(prediction: str, gold: str | None, category: int) -> float:
    """A prediction's score as eval_question_answering gives it: categories 2-4 F1 against the gold (category 3's cut at
    its first ';'), category 1 the mean over the gold's comma-separated parts of the best F1 of any of the
    prediction's parts, category 5 1 when the prediction says the information is not there (the gold is not read)."""
    if category == 5:
        return float(any(a in prediction.lower() for a in ABSTAINS))
    gold = gold.split(";")[0].strip() if category == 3 else gold
    if category == 1:  # numpy's mean, as LoCoMo's: its pairwise sum can differ from Python's in the last bit
        parts = [p.strip() for p in prediction.split(",")]
        return float(numpy.mean([max(token_f1(p, g.strip()) for p in parts) for g in gold.split(",")]))
    return token_f1(prediction, gold)


def evidence_recall(entries: tuple[str, ...], sample_id: str, released: list[str]) -> float:
    """eval_question_answering's recall of a question's evidence in a dialog context: the share of its entries, as
    listed, that are released turns' dia_ids (a composite "D8:6; D9:17" or a mistyped entry never is); 1 for a
    question that cites none."""
    if not entries:
        return 1.0
    shown = set(released)
    return sum(record_id(sample_id, e) in shown for e in entries if DIA_ID.match(e)) / len(entries)


def sample_of(question: Question) -> str:
    """The sample a question is asked of: its id is "<sample>-q<n>" (read_questions)."""
    return question.id.rsplit("-q", 1)[0]


OWN_ABOUT = ("LoCoMo's own scores, as task_eval/evaluation.py's eval_question_answering computes them: F1 of the answer "
             "alone against the gold (normalized, Porter-stemmed tokens; category 1 split on commas, category 3's gold cut "
             "at ';'); category 5 is 1 when the answer says 'no information available' or 'not mentioned', the gold not "
             "read (444 of its 446 items carry no answer, on which LoCoMo's function at 3eb6f2c raises: memgrid applies "
             "its category-5 rule to the answer alone). Evidence recall: the share of a question's evidence entries, as "
             "listed, whose turn the search released (a composite entry such as 'D8:6; D9:17' never counts, as in "
             "LoCoMo), 1 for a question citing none. '1-4': over every question of categories 1-4, category 5 apart, as "
             "vendors quote LoCoMo; 'all': over all five, LoCoMo's own overall (evaluation_stats.py analyze_aggr_acc). "
             "Categories are named as LoCoMo's scoring names them; other readers swap 1 and 4 (mem0 issue 2609, LoCoMo "
             "issue 29).")


# The vendors' J on LoCoMo, with its prompt and model as published, and a strict prompt beside it: the same answers
# score 91.0 % under the first and 35.0 % under the second (mem0ai/memory-benchmarks issue 29). Copied word for word
# (trailing spaces and typographic quotes included): a prompt's sha256 is recorded with every verdict.
MEM0_JUDGE = AnswerJudgePrompt(
    "mem0", '\nYour task is to label an answer to a question as ’CORRECT’ or ’WRONG’. You will be given the following data:\n    (1) a question (posed by one user to another user), \n    (2) a ’gold’ (ground truth) answer, \n    (3) a generated answer\nwhich you will score as CORRECT/WRONG.\n\nThe point of the question is to ask about something one user should know about the other user based on their prior conversations.\nThe gold answer will usually be a concise and short answer that includes the referenced topic, for example:\nQuestion: Do you remember what I got the last time I went to Hawaii?\nGold answer: A shell necklace\nThe generated answer might be much longer, but you should be generous with your grading - as long as it touches on the same topic as the gold answer, it should be counted as CORRECT. \n\nFor time related questions, the gold answer will be a specific date, month, year, etc. The generated answer might be much longer or use relative time references (like "last Tuesday" or "next month"), but you should be generous with your grading - as long as it refers to the same date or time period as the gold answer, it should be counted as CORRECT. Even if the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it\'s the same date.\n\nNow it\'s time for the real question:\nQuestion: {question}\nGold answer: {gold_answer}\nGenerated answer: {generated_answer}\n\nFirst, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG. \nDo NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.\n\nJust return the label CORRECT or WRONG in a json format with the key as "label".\n',
    ("question", "gold_answer", "generated_answer"),
    "github.com/mem0ai/mem0 evaluation/metrics/llm_judge.py at aae5989, its last change before the evaluation moved "
    "to mem0ai/memory-benchmarks (ACCURACY_PROMPT; Zep's zep-papers locomo_eval asks the same)", "gpt-4o-mini", json_reply=True)
STRICT_JUDGE = AnswerJudgePrompt(
    "strict", 'Decide CORRECT or WRONG. Be strict — this is an adversarial audit of answer quality.\n\nMark CORRECT only if ALL of these hold:\n- The generated answer states the SAME fact(s) as the gold answer — not merely the same topic.\n- For list/multi-part gold answers, the generated answer covers the gold items (partial coverage is WRONG).\n- Dates, durations, names, numbers, and entities match the gold answer exactly (no ±tolerance).\n- No fabricated specifics, no hedging, no "not mentioned".\n\nMark WRONG if the answer is vague, only topically related, partially correct, off by any date/number,\nreferences a different entity, or adds plausible-but-unverified specifics.\n\nQuestion: {question}\nGold answer: {answer}\nGenerated answer: {response}\n\nReturn JSON with "reasoning" (one sentence) and "label" (CORRECT or WRONG).',
    ("question", "answer", "response"),
    "github.com/mnemoverse/mnemoverse-benchmarks-paper kit/prompts/judge_strict_ours.txt at 744ef31 (the strict prompt "
    "of 'The Judge Is the Benchmark')", "gpt-5",
    system='You are a STRICT, literal judge of memory-recall answers. Return JSON only. Reward only answers that are actually correct; do not give the benefit of the doubt.')


# LoCoMo's own QA prompt as its retrieval rows ask it (task_eval/gpt_utils.py at 3eb6f2c, get_gpt_answers with
# --use-rag --rag-mode dialog and batch size 1, as scripts/evaluate_rag_gpts.sh runs it): the released turns, one line
# each as "<session_N_date_time>: <turn>" in the search's order, then QA_PROMPT with the question (a temporal one,
# category 2, asks for an approximate date); one message, max_tokens 32, temperature 0, n 1 (global_methods.py
# run_chatgpt), the message's role "system" for a gpt-3.5 model and "user" for the others (its gpt-4 branch; a model
# its code names neither way it does not ask, and memgrid sends the gpt-4 shape). A category-5 question is not asked:
# its code builds that request from the item's `answer`, which 444 of the 446 published ones do not carry (it raises
# there), so memgrid records no answer for it; LoCoMo's own scores pool categories 1-4.
QA_PROMPT = ("\nBased on the above context, write an answer in the form of a short phrase for the following question. "
             "Answer with exact words from the context whenever possible.\n\nQuestion: {} Short answer:\n")
TEMPORAL_HINT = " Use DATE of CONVERSATION to answer with an approximate date."


@dataclass(frozen=True)
class RagPrompt(AnswerPrompt):
    def request(self, model: str, question: Question, records: Sequence[Record]) -> dict | None:
        if question.kind == kind_of(5):
            return None
        context = "\n".join(f"{r.date_time}: {r.text}" for r in records)
        asked = question.text + (TEMPORAL_HINT if question.kind == kind_of(2) else "")
        role = "system" if "gpt-3.5" in model else "user"
        return {"model": model, "messages": [{"role": role, "content": context + "\n\n" + self.user.format(asked)}],
                **dict(self.settings)}

    def reading(self) -> dict:
        return {"item": r'^(?=.* said, ")', "question": r"\nQuestion: (.*?) Short answer:", "statement": r'^.*? said, "'}

    def fields(self) -> dict:
        return {"layout": "locomo rag dialog: date_time: turn per line; temporal hint; category 5 not asked",
                "roles": "system for gpt-3.5, else user"}


RAG_PROMPT = RagPrompt(
    name="locomo-rag-dialog", system="", user=QA_PROMPT,
    settings=(("max_tokens", 32), ("temperature", 0), ("n", 1)),
    source="task_eval/gpt_utils.py get_gpt_answers (use_rag, rag_mode dialog), github.com/snap-research/LoCoMo at "
           "3eb6f2c")


class LocomoFormat(SourceFormat):
    name = "locomo"
    protocol = "personal"
    reader_version = 3  # 2: its oracle gives each question its own evidence turns; 3: a turn keeps its date_time
    own_pools = {"1-4": tuple(kind_of(c) for c in (1, 2, 3, 4)), "all": tuple(kind_of(c) for c in CATEGORIES)}
    own_about = OWN_ABOUT
    answer_judges = (MEM0_JUDGE, STRICT_JUDGE)
    answer_prompt = RAG_PROMPT
    # The J figures vendors publish for LoCoMo (categories 1-4, Mem0's judge prompt and model), as each states it.
    published_own = {
        "Mem0": (66.88, "Mem0 paper, arXiv 2504.19413, Table 1"),
        "Mem0 (graph)": (68.44, "Mem0 paper, arXiv 2504.19413, Table 1"),
        "Zep": (65.99, "Mem0 paper, arXiv 2504.19413, Table 1"),
        "LangMem": (58.10, "Mem0 paper, arXiv 2504.19413, Table 1"),
        "OpenAI memory": (52.90, "Mem0 paper, arXiv 2504.19413, Table 1"),
        "Zep (its own run, corrected)": (75.14, "Zep blog, 'Lies, Damn Lies, & Statistics', corrected figure"),
        "Memobase": (70.91, "memodb-io/memobase docs/experiments/locomo-benchmark"),
        "Letta (filesystem agent)": (74.0, "Letta blog, 'Benchmarking AI Agent Memory: Is a Filesystem All You Need?'"),
    }
    published_own_score = ("J (mem0)", "1-4")
    published_own_note = (
        "Not directly comparable: each published figure answers with its own model and answer prompt (no answer prompt "
        "is standard for LoCoMo), most judge with gpt-4o-mini under Mem0's prompt, some re-ran their competitors; "
        "memgrid's rows answer with each row's agent and are judged by this run's judges under the same prompt (the "
        "scripted judge is an offline stand-in, never a judgement). Same data, questions (categories 1-4) and prompt; "
        "the J of a figure moves by tens of points with the judge's prompt alone (the sensitivity table).")
    export_about = ("a personal run over LoCoMo as the file its task_eval/evaluate_qa.py writes (memgrid_prediction, "
                    "_prediction_context, _f1, _recall on every qa item), a file per agent x arm")
    about = "a checkout of github.com/snap-research/LoCoMo (or its data/locomo10.json), hosted in the personal protocol"

    def import_source(self, path: Path, project: Path, suite: str, *, dry_run: bool = False, **options) -> ImportResult:
        return import_locomo(path, project, suite, dry_run=dry_run, **options)

    def hosted_units(self, folder: Path) -> list[tuple[str, str]]:
        return [(u["sample_id"], f"LoCoMo sample: {u['sessions']} sessions, {u['turns']} turns, {u['questions']} "
                 "questions") for u in provenance_of(folder)["units"]]

    def unit_conditions(self, folder: Path) -> dict[str, list[str]]:
        return {u["sample_id"]: [CONDITION] for u in provenance_of(folder)["units"]}

    def personal_unit(self, folder: Path, unit_id: str, condition: str) -> Unit:
        return hosted_unit(folder, unit_id)[0]

    def unit_files(self, folder: Path, unit_id: str, condition: str) -> dict[str, str]:
        # one file holds every sample: a sample's identity is its own part of it, so that another's does not enter it
        return {f"{DATA_FILE}#{unit_id}": hosted_unit(folder, unit_id)[1]}

    def answer_scores(self, question: Question, answer: str) -> dict[str, float]:
        category = int(question.kind.split(" ", 1)[0])
        return {"f1": locomo_f1(answer, question.presence[0].value if question.presence else None, category)}

    def evidence_recall(self, question: Question, released: list[str]) -> float | None:
        return evidence_recall(question.evidence_entries, sample_of(question), released)

    def judged_gold(self, question: Question) -> str | None:
        """Categories 1-4 against their gold answer; category 5 is not asked, as the vendors' J leaves it out."""
        return question.presence[0].value if question.presence else None

    def export(self, run_dir: Path, output: Path, log=print) -> ExportResult:
        from runner.sources.locomo_export import export_run  # the ledger's reader, only for an export

        return export_run(run_dir, output, published_qa, log)

    def grid_example(self, folder: Path, suite: str) -> dict | None:
        return {"name": suite, "protocol": self.protocol, "suite": suite, "tasks": "all", "conditions": [CONDITION],
                "arms": ["bare", "full_context", "oracle_memory", "recall"], "agents": ["extractive"], "seeds": 1}

    def closing_lines(self, result: ImportResult, suite: str, dry_run: bool) -> list[str]:
        if not result.plans or dry_run:
            return []
        return [f"suite {suite} runs in the {self.protocol} protocol (persons = samples, one condition: {CONDITION}); "
                f"{DATA_FILE}'s sha256 is in tasks/{suite}/provenance.json"]
