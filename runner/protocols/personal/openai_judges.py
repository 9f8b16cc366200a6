"""Model judges as a hosted benchmark publishes them: through an OpenAI-compatible endpoint, with its own prompt.

For a Memora suite this is Memora's repository judge (evals/model_eval/model_based_evaluator.py, ModelEvaluator and
MultiJudgeEvaluator at a6493188): its system and user prompts word for word (its `Target item being evaluated:` line
included, which its own evaluator fills with None: its released questions name no target item), temperature 0, and a
JSON reply {"answer": "yes" | "no", "confidence", "explanation"}, code fences stripped as it strips them. A
sub-question is correct when a strict majority of the valid verdicts matches its expected answer (judges.py).

Where memgrid departs from that evaluator, on purpose: Memora reads a reply it cannot parse by looking for "yes" or
"no" in its text, and scores a failed request as a wrong answer; here a reply that is not such JSON, and any
transport failure, is an invalid verdict: left out of the majority and counted, never scored as the answer's quality.

The endpoint is VERIFIER_OPENAI_BASE_URL (default OpenRouter's, Memora's provider) with the key from
VERIFIER_OPENAI_API_KEY. The key stays in this process: it is never written to the run folder, the judge cache or a
verdict, and an error text that quotes it (an endpoint's 401 may) has it replaced before it is kept.
"""

import json
import os
from dataclasses import dataclass, field
from functools import cached_property

from runner.digest import sha256_bytes
from runner.units.personal import AnswerJudgePrompt, Criterion, SubQuestion, read_label
from runner.protocols.personal.judges import Verdict
from runner.protocols.personal.panel import JudgeCache, cache_key

BASE_URL_ENV, KEY_ENV = "VERIFIER_OPENAI_BASE_URL", "VERIFIER_OPENAI_API_KEY"
DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
# Named panels (grid `judges: <name>`), each asked through the OpenAI-compatible endpoint.
PRESETS = {
    # Memora's repository panel: DEFAULT_JUDGE_MODELS of its model_based_evaluator.py.
    "memora": ("openai/gpt-4.1", "anthropic/claude-haiku-4.5", "google/gemini-2.5-flash"),
    # The seed's fixed panel ("Evolving Personal Memory").
    "seed": ("deepseek/deepseek-v4.1-flash", "qwen/qwen3.6-35b-a3b", "qwen/qwen3.5-9b"),
    # The vendors' J on LoCoMo: the one model Mem0's evaluation/metrics/llm_judge.py asks (a LoCoMo suite's answer
    # judges, sources/locomo.py, each asked of it).
    "mem0": ("gpt-4o-mini",),
}
REQUEST_SECONDS = 120
RETRIES = 2  # the SDK's own retries (connection errors, 408/429/5xx) with backoff: Memora's client tries 3 times

SYSTEM_PROMPT = """You are an expert evaluator assessing AI assistant responses. Your task is to answer a YES/NO evaluation question about a given response.

You must provide your answer in the following JSON format:
{
    "answer": "yes" or "no",
    "confidence": 0.0 to 1.0,
    "explanation": "Brief explanation of your reasoning"
}

Be objective and thorough in your evaluation."""
USER_PROMPT = """Please evaluate the following AI response against the evaluation question.

AI RESPONSE TO EVALUATE:
{response}

EVALUATION QUESTION:
{question}
{context}

Provide your evaluation in JSON format with answer (yes/no), confidence (0.0-1.0), and explanation."""
PROMPT_SHA256 = sha256_bytes((SYSTEM_PROMPT + "\n\n" + USER_PROMPT).encode())


def public_url(url: str) -> str:
    """The endpoint as the run folder records it: no credentials a URL may carry (user:password@, a query)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.hostname or "", parts.path, "", "")) if parts.port is None else \
        urlunsplit((parts.scheme, f"{parts.hostname}:{parts.port}", parts.path, "", ""))


def prompts_of(answer: str, criterion: Criterion) -> tuple[str, str]:
    """The system and user prompts one judge is sent for one criterion, as Memora's _build_judge_prompt fills them."""
    if not isinstance(criterion, SubQuestion):
        raise ValueError("the published judge asks a hosted benchmark's yes/no sub-questions only")
    context = f"\nTarget item being evaluated: None\nEvaluation type: {criterion.evaluation_type}"
    return SYSTEM_PROMPT, USER_PROMPT.format(response=answer, question=criterion.value, context=context)


def parse_reply(text: str | None) -> tuple[bool | None, str]:
    """(yes: True, no: False, else None; what the reply said). A reply is valid only as the JSON the prompt asks for."""
    body = (text or "").strip()
    if body.startswith("```"):  # as Memora's parser: drop the fence lines
        lines = body.split("\n")
        body = "\n".join(lines[1:-1]) if len(lines) > 2 else body
        body = body.replace("```json", "").replace("```", "").strip()
    try:
        reply = json.loads(body)
    except json.JSONDecodeError:
        return None, f"malformed reply (not JSON): {body[:60]!r}"
    answer = reply.get("answer") if isinstance(reply, dict) else None
    verdict = {"yes": True, "no": False}.get(answer.strip().lower() if isinstance(answer, str) else None)
    if verdict is None:
        return None, f"malformed reply (answer is {answer!r}, not yes or no)"
    confidence = reply.get("confidence")
    return verdict, f"answered {answer.strip().lower()} (confidence {confidence!r}): {str(reply.get('explanation', ''))[:120]}"


@dataclass
class Endpoint:
    """The OpenAI-compatible endpoint the judges of one cell are asked through (one client, so its connections are
    reused across the cell's requests), and what they spent."""
    base_url: str
    key: str = field(repr=False)
    requests: int = 0
    usage: dict = field(default_factory=lambda: {"input_tokens": 0, "output_tokens": 0})

    @classmethod
    def from_env(cls) -> "Endpoint":
        return cls(os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL, os.environ.get(KEY_ENV, ""))

    @cached_property
    def client(self):
        import openai

        return openai.OpenAI(base_url=self.base_url, api_key=self.key, timeout=REQUEST_SECONDS, max_retries=RETRIES)

    def ask(self, model: str, system: str, user: str) -> str | None:
        return self.complete(model, [{"role": "system", "content": system}, {"role": "user", "content": user}])

    def complete(self, model: str, messages: list[dict], json_reply: bool = False) -> str | None:
        self.requests += 1
        response = self.client.chat.completions.create(
            model=model, temperature=0.0, messages=messages,
            **({"response_format": {"type": "json_object"}} if json_reply else {}))
        if response.usage is not None:
            self.usage["input_tokens"] += response.usage.prompt_tokens or 0
            self.usage["output_tokens"] += response.usage.completion_tokens or 0
        return response.choices[0].message.content if response.choices else None

    def redact(self, text: str) -> str:
        return text.replace(self.key, f"[{KEY_ENV}]") if self.key else text

    @property
    def errors(self) -> tuple:
        import openai

        return (openai.OpenAIError,)


class OpenAIJudge:
    """One judge of the panel: one model, asked each sub-question once per answer (its valid verdicts cached)."""

    def __init__(self, index: int, model: str, endpoint: Endpoint, cache: JudgeCache):
        self.name, self.model = f"model-{index}:{model}", model
        self.endpoint, self.cache = endpoint, cache

    def judge(self, answer: str, criterion: Criterion) -> Verdict:
        import openai

        system, user = prompts_of(answer, criterion)
        key = cache_key(self.name, self.model, system + "\n\n" + user, answer)
        cached = self.cache.get(key)
        if cached is not None:
            return Verdict(self.name, cached, "cached")
        try:
            reply = self.endpoint.ask(self.model, system, user)
        except openai.OpenAIError as e:
            return Verdict(self.name, None, self.endpoint.redact(f"transport: {type(e).__name__}: {e}")[:200])
        said, detail = parse_reply(reply)
        if said is not None:
            self.cache.put(key, said, {"judge": self.name, "model": self.model, "prompt_sha256": PROMPT_SHA256})
        return Verdict(self.name, said, self.endpoint.redact(detail))


class AnswerJudge:
    """One model asked one published answer prompt (a hosted benchmark's answer judge, its format's answer_judges):
    whether an answer is right against the gold answer, each (question, gold, answer) asked once (valid labels
    cached as the panel's verdicts are). `endpoint`: the OpenAI-compatible one, or the model gateway (panel.Gateway:
    the scripted model offline, or Anthropic's)."""

    def __init__(self, prompt: AnswerJudgePrompt, model: str, endpoint, cache: JudgeCache):
        self.prompt, self.model, self.endpoint, self.cache = prompt, model, endpoint, cache
        self.name = f"{prompt.name}:{model}"

    def key(self, question: str, gold: str, answer: str) -> str:
        messages = self.prompt.messages(question, gold, answer)
        return cache_key(self.name, self.model, json.dumps(messages, sort_keys=True), answer)

    def judge(self, question: str, gold: str, answer: str) -> Verdict:
        messages = self.prompt.messages(question, gold, answer)
        key = self.key(question, gold, answer)
        cached = self.cache.get(key)
        if cached is not None:
            return Verdict(self.name, cached, "cached")
        try:
            reply = self.endpoint.complete(self.model, messages, self.prompt.json_reply)
        except self.endpoint.errors as e:
            return Verdict(self.name, None, self.endpoint.redact(f"transport: {type(e).__name__}: {e}")[:200])
        correct, detail = read_label(reply)
        if correct is not None:
            self.cache.put(key, correct, {"judge": self.name, "model": self.model, "prompt_sha256": self.prompt.sha256})
        return Verdict(self.name, correct, self.endpoint.redact(detail))
