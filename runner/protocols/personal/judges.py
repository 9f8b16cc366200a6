"""The judge panel: each judge answers, for one criterion, "does the answer mention this value?".
A hosted benchmark's yes/no sub-question (corpus.SubQuestion) is judged here on the value it names: "Is 'Call family'
listed as a remaining todo item?" as a mention of Call family (blind to what the question asks beyond the mention);
one that names no value gets no verdict from these judges.

A criterion is correct iff a strict majority of the judges that gave a valid verdict matches what it
expects (presence: yes; forgetting: no); with no valid verdict it is incorrect. A judge that cannot
answer (a transport failure, a malformed reply) gives `None`: it is left out of the majority and
counted as invalid, never scored as the answerer's quality.

The offline panel is three deterministic judges, each with blind spots this module's tests pin:
- `exact`: the value or an alias, normalised (case, accents, punctuation), as a whole word sequence.
  Blind to paraphrase ("Northwind" for "Northwind Analytics") and to negation: "you no longer live in
  Porto" mentions Porto, so a forgetting criterion on Porto is judged failed although the answer
  treats Porto as outdated.
- `tokens`: token containment of the value (>= half its words) or token F1 against the best window of
  the answer (>= 0.5). Catches a partial name; shares the negation blind spot; can credit a shared
  common word ("Bank" of "Meridian Bank" in "Riverside Bank").
- `embedding`: cosine similarity of static word embeddings (wordllama's 256-dimension model, whose
  weights ship in its pinned wheel; nothing is downloaded) between the value and each clause of the
  answer, >= 0.6. Credits a clause that names the value in other words; calls near neighbours alike
  ("vegan" and "vegetarian" are 0.71 apart), so alone it would fail a vegan answer on a "should not
  mention vegetarian" criterion; the two lexical judges outvote it there.
"""

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import cache, lru_cache

from runner.units.personal import Criterion, SubQuestion

EMBEDDING_THRESHOLD = 0.6
TOKEN_THRESHOLD = 0.5


@dataclass(frozen=True)
class Verdict:
    judge: str
    mentions: bool | None  # None: the judge gave no valid verdict
    detail: str


NAMES_NOTHING = "the sub-question names no value to look for"


def forms(criterion: Criterion) -> tuple[str, ...]:
    """What a deterministic judge looks for in the answer: the value and its aliases, or, for a hosted benchmark's
    yes/no sub-question, the value it names (none: no verdict, which leaves the criterion to the other judges)."""
    if isinstance(criterion, SubQuestion):
        return (criterion.named,) if criterion.named else ()
    return (criterion.value, *criterion.aliases)


def normalise(text: str) -> list[str]:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    return re.findall(r"[a-z0-9]+", folded)


@lru_cache(maxsize=4)
def answer_words(answer: str) -> tuple[tuple[str, ...], frozenset[str]]:
    """The answer's normalised words, and their set, made once per answer: every criterion of its question (70 for a
    Memora persona) reads the same words."""
    words = tuple(normalise(answer))
    return words, frozenset(words)


class ExactJudge:
    name = "exact"

    def judge(self, answer: str, criterion: Criterion) -> Verdict:
        if not forms(criterion):
            return Verdict(self.name, None, NAMES_NOTHING)
        words, _ = answer_words(answer)
        for form in forms(criterion):
            target = normalise(form)
            if target and any(list(words[i:i + len(target)]) == target for i in range(len(words) - len(target) + 1)):
                return Verdict(self.name, True, f"{form!r} appears")
        return Verdict(self.name, False, "no form of the value appears")


class TokenJudge:
    name = "tokens"

    def judge(self, answer: str, criterion: Criterion) -> Verdict:
        if not forms(criterion):
            return Verdict(self.name, None, NAMES_NOTHING)
        words, vocabulary = answer_words(answer)
        best = (0.0, 0.0, "")
        for form in forms(criterion):
            target = normalise(form)
            if not target:
                continue
            contained = sum(t in vocabulary for t in target) / len(target)
            best = max(best, (contained, best_window_f1(target, words), form))
        contained, f1, form = best
        return Verdict(self.name, contained >= TOKEN_THRESHOLD or f1 >= TOKEN_THRESHOLD,
                       f"containment {contained:.2f}, best-window F1 {f1:.2f} for {form!r}")


def best_window_f1(target: list[str], words: tuple[str, ...]) -> float:
    """The best token_f1 of `target` against a window of the answer as long as it (the whole answer when it is
    shorter), in one pass: a window's F1 is its shared token count over the target's length, and the count moves by
    at most one as the window slides (a long answer's every window, counted afresh, took most of a cell's judging:
    26 of 31 CPU seconds for a full-context answer of 289 KB)."""
    k = len(target)
    if len(words) <= k:
        return token_f1(target, list(words))
    want, have, common, best = Counter(target), Counter(), 0, 0
    for i, word in enumerate(words):
        if word in want:
            common += have[word] < want[word]
            have[word] += 1
        if i >= k and (gone := words[i - k]) in want:
            have[gone] -= 1
            common -= have[gone] < want[gone]
        best = max(best, common)
    return best / k


def token_f1(expected: list[str], window: list[str]) -> float:
    common = sum(min(expected.count(t), window.count(t)) for t in set(expected))
    if not common:
        return 0.0
    precision, recall = common / len(window), common / len(expected)
    return 2 * precision * recall / (precision + recall)


@cache
def _wordllama():
    from pathlib import Path

    import wordllama

    # Its weights and tokenizer ship in the wheel; with the package folder as cache nothing is fetched.
    return wordllama.WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)


@lru_cache(maxsize=4)
def clause_vectors(answer: str):
    """The answer's clauses and their embeddings, made once per answer: every criterion of its question is compared
    with the same clauses (a long answer has thousands; embedding them again per criterion took most of a cell's
    judging, e.g. 1.8 s a criterion on a 300 KB answer)."""
    clauses = [c.strip() for c in re.split(r"[.;,:\n]| and ", answer) if c.strip()]
    return clauses, _wordllama().embed(clauses) if clauses else None


class EmbeddingJudge:
    name = "embedding"

    def judge(self, answer: str, criterion: Criterion) -> Verdict:
        if not forms(criterion):
            return Verdict(self.name, None, NAMES_NOTHING)
        clauses, vectors = clause_vectors(answer)
        if not clauses:
            return Verdict(self.name, False, "the answer is empty")
        model = _wordllama()
        scores = model.vector_similarity(model.embed(list(forms(criterion))), vectors)  # forms x clauses
        best = scores.max(axis=0).argmax()
        score, clause = float(scores[:, best].max()), clauses[best]
        return Verdict(self.name, score >= EMBEDDING_THRESHOLD, f"similarity {score:.2f} with {clause[:60]!r}")


OFFLINE_PANEL = (ExactJudge(), TokenJudge(), EmbeddingJudge())


def panel_names(panel=OFFLINE_PANEL) -> list[str]:
    return [j.name for j in panel]


@dataclass(frozen=True)
class CriterionResult:
    value: str
    expected: bool  # True: presence (should mention); False: forgetting (should not)
    correct: bool
    valid: int  # judges that gave a verdict
    verdicts: tuple[Verdict, ...]

    @property
    def decided(self) -> bool:
        """Whether a strict majority of the valid verdicts agrees either way (no verdict, or a tie: undecided)."""
        said = [v.mentions for v in self.verdicts if v.mentions is not None]
        return 2 * max(said.count(True), said.count(False)) > len(said) if said else False


def judge_criterion(answer: str, criterion: Criterion, expected: bool, panel=OFFLINE_PANEL) -> CriterionResult:
    verdicts = []
    for j in panel:
        try:
            verdicts.append(j.judge(answer, criterion))
        except Exception as e:  # a judge that fails invalidates its own verdict, never the answer
            verdicts.append(Verdict(j.name, None, f"{type(e).__name__}: {e}"[:200]))
    valid = [v for v in verdicts if v.mentions is not None]
    agree = sum(v.mentions == expected for v in valid)
    return CriterionResult(criterion.value, expected, bool(valid) and agree * 2 > len(valid), len(valid), tuple(verdicts))
