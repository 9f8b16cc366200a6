"""The model judge panel: N independent model judges (grid `judges:`, one model id each, repeats allowed), each
asked one yes/no question per criterion through a model gateway the controller starts for the cell.

The gateway is the same sidecar a claude-code session uses (images/model/memgrid-gateway): it holds the key,
forwards only the Messages API and records every request. With the model `scripted` the scripted model
server plays a judge (it says yes when the value appears in the answer, case folded): the whole path runs
offline, which is what the tests drive; live models need ANTHROPIC_API_KEY.

A reply that is not yes or no, and any transport failure, is an invalid verdict: left out of the majority,
counted, never scored as the answerer's quality. Valid verdicts are cached by (judge, model, the filled
prompt's digest, the answer's digest) in the runs folder's judge-cache.jsonl, so judging a run again
(a resume, `memgrid reproduce` beside the original) replays without a model; the prompt and its digest
are in run.json.
"""

import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from runner.digest import sha256_bytes, sha256_json
from runner.units.personal import Criterion, SubQuestion
from runner.protocols.personal.judges import Verdict

JUDGE_PROMPT = """You are one judge of a memory benchmark. An assistant was asked a question about its user and answered.

<question>{question}</question>
<answer>{answer}</answer>

Does the answer mention <value>{value}</value> (or an obvious other name for it) as something that holds for the user now?
Reply with one word: yes or no."""
PROMPT_SHA256 = sha256_bytes(JUDGE_PROMPT.encode())
# A hosted benchmark's criteria are yes/no questions about the answer (corpus.SubQuestion): asked as they are.
CHECK_PROMPT = """You are one judge of a memory benchmark. An assistant was asked a question about its user and answered.

<question>{question}</question>
<answer>{answer}</answer>

Answer this question about the assistant's answer: <check>{check}</check>
Reply with one word: yes or no."""
CHECK_PROMPT_SHA256 = sha256_bytes(CHECK_PROMPT.encode())
MAX_TOKENS = 5
LABEL_TOKENS = 300  # an answer judge's reply: a sentence of reasoning and a JSON label
REQUEST_SECONDS = 120


def prompt_of(question: str, answer: str, criterion: Criterion) -> str:
    if isinstance(criterion, SubQuestion):
        return CHECK_PROMPT.format(question=question, answer=answer, check=criterion.value)
    return JUDGE_PROMPT.format(question=question, answer=answer, value=criterion.value)


def parse_reply(text: str) -> bool | None:
    word = text.strip().split(maxsplit=1)[0].strip(".,!:;\"'").lower() if text.strip() else ""
    return {"yes": True, "no": False}.get(word)


@dataclass
class JudgeCache:
    """Valid verdicts by key, appended as JSON lines (fsynced); a torn last line is skipped on load."""
    path: Path
    entries: dict = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def open(cls, path: Path) -> "JudgeCache":
        cache = cls(path)
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                    cache.entries[entry["key"]] = entry["mentions"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue
        return cache

    def get(self, key: str) -> bool | None:
        return self.entries.get(key)

    def put(self, key: str, mentions: bool, record: dict) -> None:
        with self.lock:
            self.entries[key] = mentions
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"key": key, "mentions": mentions, **record}, sort_keys=True) + "\n")
                f.flush()


def cache_key(judge: str, model: str, prompt: str, answer: str) -> str:
    return sha256_json({"judge": judge, "model": model, "prompt": sha256_bytes(prompt.encode()),
                        "answer": sha256_bytes(answer.encode())})


@dataclass
class Gateway:
    """Where the controller reaches a cell's gateway, and what the judges spent through it."""
    url: str | None  # None: no gateway was started (every verdict came from the cache)
    requests: int = 0
    usage: dict = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0})

    errors = (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError)  # a request that failed

    def ask(self, model: str, prompt: str) -> str:
        return self.complete(model, [{"role": "user", "content": prompt}], max_tokens=MAX_TOKENS)

    def complete(self, model: str, messages: list[dict], json_reply: bool = False, max_tokens: int = LABEL_TOKENS) -> str:
        """A reply to chat messages; a system message is the Messages API's `system` (`json_reply`: the Messages API
        has no such switch; the prompts that ask for JSON say so)."""
        if self.url is None:
            raise ConnectionError("no model gateway for this cell")
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        body = json.dumps({"model": model, "max_tokens": max_tokens, **({"system": system} if system else {}),
                           "messages": [m for m in messages if m["role"] != "system"]})
        request = urllib.request.Request(f"{self.url}/v1/messages", data=body.encode(), method="POST", headers={
            "content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "sk-memgrid-placeholder"})
        self.requests += 1
        with urllib.request.urlopen(request, timeout=REQUEST_SECONDS) as response:
            message = json.loads(response.read())
        for k in self.usage:
            self.usage[k] += int((message.get("usage") or {}).get(k) or 0)
        return "".join(b.get("text", "") for b in message.get("content", []) if b.get("type") == "text")

    def redact(self, text: str) -> str:
        return text  # the gateway holds the key; nothing of it reaches this process


class ModelJudge:
    def __init__(self, index: int, model: str, gateway: Gateway, cache: JudgeCache, question: str):
        self.name, self.model = f"model-{index}:{model}", model
        self.gateway, self.cache, self.question = gateway, cache, question

    def judge(self, answer: str, criterion: Criterion) -> Verdict:
        prompt = prompt_of(self.question, answer, criterion)
        key = cache_key(self.name, self.model, prompt, answer)
        cached = self.cache.get(key)
        if cached is not None:
            return Verdict(self.name, cached, "cached")
        try:
            reply = self.gateway.ask(self.model, prompt)
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError, ValueError) as e:
            return Verdict(self.name, None, f"transport: {type(e).__name__}: {e}"[:200])
        mentions = parse_reply(reply)
        if mentions is None:
            return Verdict(self.name, None, f"malformed reply: {reply[:60]!r}")
        self.cache.put(key, mentions, {"judge": self.name, "model": self.model, "prompt_sha256":
                                       CHECK_PROMPT_SHA256 if isinstance(criterion, SubQuestion) else PROMPT_SHA256})
        return Verdict(self.name, mentions, f"replied {reply.strip()[:20]!r}")


def uncached(models: tuple[str, ...], cache: JudgeCache, items: list[tuple[str, str, Criterion]]) -> bool:
    """Whether any (question, answer, criterion) still needs a model's verdict (else no gateway is started)."""
    return any(cache.get(cache_key(f"model-{i}:{m}", m, prompt_of(q, a, c), a)) is None
               for i, m in enumerate(models) for q, a, c in items)
