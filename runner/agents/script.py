"""The scripted model's script: what the offline model server (images/model/memgrid-model-server) does in one
cell, derived from the task, the arm and its memory. It reaches the model container only, never the sandbox, and
it is the same for every agent the server plays (claude-code over the Messages API, codex over the Responses API):
how the session searches (by what the arm gives it), the options it looks for and the solution of each.
"""

import math
import re
from functools import lru_cache

from runner.agents.reference import task_options
from runner.arms.kinds import WORKSPACE, kind_of
from runner.env.bundle import tree_entries
from runner.plan.spec import ArmSpec, TaskSpec

STOP = set("""this that with from have will your into only they them then than when what which while there their
about after again also been being both each every just more most must other same should some such these those
under until very does done make made keep kept file files code test tests need needs using used uses like line
lines still where would could first last does here""".split())  # the reader's list (images/sandbox/memgrid-reader)


@lru_cache(maxsize=2)
def _lowered(memory, condition: str, seed: int) -> dict[str, str]:
    return {name: data.decode(errors="replace").lower() for name, data in memory.documents(condition, seed)}


@lru_cache(maxsize=256)
def grep_ranked(memory, condition: str, seed: int, prompt: str, top: int = 10) -> tuple[str, ...]:
    """The files an agent grepping /sandbox/memory for the prompt's words would open first (rarest
    words weigh most), ranked as the reader ranks them."""
    terms = sorted({w for w in re.findall(r"[a-z_][a-z0-9_]{3,}", prompt.lower()) if w not in STOP})
    texts = _lowered(memory, condition, seed)
    score: dict[str, float] = {}
    for term in terms:
        names = [n for n, text in texts.items() if term in text]
        for n in names:
            score[n] = score.get(n, 0.0) + math.log(len(texts) / len(names))
    return tuple(sorted(score, key=lambda n: (-score[n], n))[:top])


KEYWORDS = 8  # as memgrid-reader: a substring search is asked for the prompt's longest words, one call each


def keywords(prompt: str) -> list[str]:
    """The words a scripted model asks a substring search for, as the reader picks them."""
    terms = {w for w in re.findall(r"[a-z_][a-z0-9_]{3,}", prompt.lower()) if w not in STOP}
    return sorted(terms, key=lambda w: (-len(w), w))[:KEYWORDS]


def search_queries(text: str, call: dict) -> list[str]:
    """What an agent sends the arm's search tool for `text` (a prompt, a key), by arm.yaml's mcp.search
    (`call`, SearchSpec.as_config()): one query per keyword for a substring search; else the text itself, or,
    for a product that reads at most query_chars of a query (and would keep its own pick of them, e.g. the
    tail, where every task prompt ends alike), its first query_chars cut back to a word boundary, as a model
    writing a short query leads with the task. memgrid-reader's search_queries is this function (it cannot
    import the runner); tests/test_query_chars.py holds them equal."""
    if call.get("query") == "keywords":
        return keywords(text)
    limit = call.get("query_chars")
    if limit is None or len(text) <= limit:
        return [text]
    whole_words = re.match(r"(?s)(.*\S)\s", text[:limit + 1])
    return [whole_words.group(1) if whole_words else text[:limit]]


def scripted_search(arm: ArmSpec, prompt: str, ranked_documents=tuple) -> dict:
    """The scripted model's `search` for a session given `prompt`: where the arm's memory is, and for a search
    tool the queries it sends (the model server sends only these)."""
    search = kind_of(arm).location(arm).script(ranked_documents)
    if search.get("call"):
        search["queries"] = search_queries(prompt, search["call"])
    return search


def build_script(task: TaskSpec, arm: ArmSpec, memory, condition: str, seed: int) -> dict:
    """What the scripted model does in this cell: how it searches (by what the arm gives the session),
    the options it looks for and the solution of each. It reaches the model container only."""
    search = scripted_search(arm, task.prompt, lambda: grep_ranked(memory, condition, seed, task.prompt))
    fixture = {e.path for e in tree_entries(task.fixture, "w")}
    solutions = {}
    for option in ["naive", *task_options(task)]:
        solutions[option] = [{"path": f"{WORKSPACE}/{e.path.removeprefix('w/')}", "content": e.data.decode(),
                              "exists": e.path in fixture} for e in tree_entries(task.reference(option), "w")]
    return {"prompt": task.prompt, "search": search, "options": task_options(task), "solutions": solutions}
