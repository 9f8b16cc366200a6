"""The claude-code agent (Harbor's installed agent): the real Claude Code CLI in the sandbox.

Install: the pinned platform binary is fetched from the npm registry on the host, checked against
the checksums the registry published for that version (images/claude-code/pin.yaml), and layered
over the image a cell runs in. Run: `claude -p` with stream-json output, the arm's MCP servers and
nothing else (--strict-mcp-config), the core editing tools plus the arm's, docker commands
disallowed, the arm's instruction appended to the system prompt, and an environment made only of
what the session needs. The raw stream is kept (gzip); its parse feeds the gate and the ledger.
"""

import base64
import gzip
import hashlib
import io
import json
import math
import re
import tarfile
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from runner.agents.base import (BUDGET_EXHAUSTED, ENDED_CAPPED, ENDED_ERROR, ENDED_EXIT_NONZERO, ENDED_OK,
                                ENDED_TIMEOUT, Agent, Transcript, record_truncation)
from runner.agents.reference import task_options
from runner.env.archive import Entry
from runner.arms.kinds import WORKSPACE, kind_of
from runner.env.bundle import tree_entries
from runner.results.costs import Price, price_for
from runner.digest import sha256_bytes, sha256_json
from runner.errors import EngineError, SpecError, UserError
from runner.env.images import IMAGES_DIR, ImageRef, build_image, ensure_derived, find_image
from runner.env.model_endpoint import SCRIPTED, ModelEndpoint, live_api_key
from runner.env.sandbox import Sandbox
from runner.plan.spec import ArmSpec, TaskSpec, read_yaml
from runner.agents.stream_json import StreamSession, parse_stream, transcript_events

NAME = "claude-code"
CONTEXT = IMAGES_DIR / "claude-code"
STAMP = ".memgrid-claude.json"
CORE_TOOLS = ("Read", "Write", "Edit", "Bash")
DISALLOWED_TOOLS = ("Bash(docker:*)", "Bash(docker *)", "WebFetch", "WebSearch")
MAX_RETRIES = 2  # the CLI retries an unreachable model for minutes unless bounded
# The session's whole environment. Without the first, the CLI looks up its vendor's hosts and, on an
# internal network, each lookup hangs ~20 s; without ENABLE_TOOL_SEARCH=false, MCP tools are
# deferred: listed at init but never sent to the model.
SESSION_ENV = {
    "HOME": "/home/agent", "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1", "ENABLE_TOOL_SEARCH": "false", "CLAUDE_CODE_MAX_RETRIES": str(MAX_RETRIES),
}
MCP_CONFIG = "/sandbox/agent/mcp.json"


# ---- install ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ClaudeCodePin:
    package: str
    version: str
    tarball: str
    integrity: str  # sha512-<base64>, as the registry publishes it
    shasum: str  # sha1 hex, as the registry publishes it

    def as_dict(self) -> dict:
        return {"package": self.package, "version": self.version, "integrity": self.integrity, "shasum": self.shasum}


PIN_FIELDS = ("package", "version", "tarball", "integrity", "shasum")


def load_pin() -> ClaudeCodePin:
    path = CONTEXT / "pin.yaml"
    data = read_yaml(path)
    wrong = sorted(set(PIN_FIELDS) ^ set(data)) or [k for k in PIN_FIELDS if not isinstance(data[k], str)]
    if wrong:
        raise SpecError(path, wrong[0], "is missing, unknown or not text",
                        f"give exactly {', '.join(PIN_FIELDS)}, each as text, as the npm registry publishes them")
    return ClaudeCodePin(**data)


def verify_tarball(data: bytes, pin: ClaudeCodePin) -> None:
    algo, _, expected = pin.integrity.partition("-")
    seen = base64.b64encode(hashlib.new(algo, data).digest()).decode()
    if seen != expected or hashlib.sha1(data).hexdigest() != pin.shasum:
        raise EngineError(f"{pin.tarball}: checksum mismatch ({algo} {seen[:16]}... != pinned {expected[:16]}...): "
                          "fix: the download is corrupt or the pin is wrong; re-run, or correct images/claude-code/pin.yaml")


def fetch_binary(pin: ClaudeCodePin, log=print) -> Path:
    """The verified binary in the build context; fetched only when missing or of another pin."""
    binary, stamp = CONTEXT / "claude", CONTEXT / STAMP
    if binary.is_file() and stamp.is_file() and json.loads(stamp.read_text()) == pin.as_dict():
        return binary
    log(f"fetching {pin.package}@{pin.version} from the npm registry")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(pin.tarball, timeout=300) as response:
            data = response.read()
    except OSError as e:
        raise EngineError(f"{pin.tarball}: download failed ({e}): fix: this needs the npm registry "
                          "(set HTTPS_PROXY if one is required)") from None
    verify_tarball(data, pin)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        member = tar.getmember("package/claude")
        with tempfile.NamedTemporaryFile(dir=CONTEXT, delete=False) as tmp:
            tmp.write(tar.extractfile(member).read())
    Path(tmp.name).chmod(0o755)
    Path(tmp.name).replace(binary)
    stamp.write_text(json.dumps(pin.as_dict(), indent=1, sort_keys=True) + "\n")
    log(f"verified {len(data) / 2**20:.0f} MiB tarball ({pin.integrity[:20]}...) in {time.monotonic() - started:.1f} s")
    return binary


def agent_image_tag(base: ImageRef, pin: ClaudeCodePin) -> str:
    # The pin names the binary (its checksum was verified at fetch), so the 400 MB file is not re-hashed.
    dockerfile = sha256_bytes((CONTEXT / "Dockerfile").read_bytes())
    return f"memgrid-claude-code:{sha256_json({'dockerfile': dockerfile, 'pin': pin.integrity, 'parent': base.id})[:12]}"


def ensure_agent_image(client, base: ImageRef, log=print) -> ImageRef:
    """The claude-code layer over `base` (the sandbox image or an arm's own image)."""
    pin = load_pin()
    tag = agent_image_tag(base, pin)
    image = find_image(client, tag)
    if image is None:
        fetch_binary(pin, log)
        log(f"building {tag} over {base.tag}")
        image = build_image(client, CONTEXT, tag, {"BASE": base.tag}, {"memgrid.role": "agent", "memgrid.agent": NAME},
                       "see images/claude-code/Dockerfile")
    return ImageRef(f"agent:{NAME}:{base.role}", tag, image.id)


# ---- the scripted model's script ----------------------------------------------------------------

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


# ---- run ----------------------------------------------------------------------------------------

def mcp_config(arm: ArmSpec, agent_config: dict) -> dict:
    """The session's only MCP servers: the arm's own (none for other kinds)."""
    if kind_of(arm).own_server(arm) is None:
        return {"mcpServers": {}}
    spec = agent_config["mcp"]
    server = {"type": "stdio", "command": spec["command"][0], "args": spec["command"][1:]}
    if spec.get("env"):  # a protocol's switches for the arm (planted: namespace, off, ablated lanes)
        server["env"] = spec["env"]
    return {"mcpServers": {spec["server"]: server}}


def allowed_tools(arm: ArmSpec) -> list[str]:
    server = kind_of(arm).own_server(arm)
    return [*CORE_TOOLS, *([f"mcp__{server.server}"] if server is not None else [])]


class ClaudeCodeAgent(Agent):
    name = NAME
    needs_model = True
    core_tools = CORE_TOOLS  # the gate proves the model was offered these beside the arm's memory tools
    protocols = ("coding", "two-session", "planted")  # the protocols the scripted model has a script for

    def __init__(self, setup):
        super().__init__(setup)
        self.task, self.arm, self.model = setup.task, setup.arm, setup.run_setup.model
        self.instructions, self.raw_path = setup.instructions, setup.record_dir / "claude.stream.jsonl.gz"
        self.endpoint_env = setup.endpoint.sandbox_env()

    @classmethod
    def prepare_grid(cls, client, grid, grid_path, images, arm_images: dict, log=print):
        return prepare_claude_code(client, grid, grid_path, images, arm_images, log=log)

    @classmethod
    def image(cls, run_setup, base):
        return run_setup.agent_images[base.id]

    @classmethod
    def open_endpoint(cls, client, run_setup, images, run_id: str, cell, task, arm, memory, attempt: int,
                      script: dict | None = None, max_output_tokens: int | None = None) -> ModelEndpoint:
        """The cell's own network, open, for the model gateway (and, offline, the scripted model playing this
        session: the protocol's script for it, or a coding task's); the caller starts the sidecars on it
        (`start_sidecars`) while the sandbox starts."""
        if run_setup.model != SCRIPTED:
            script = None
        elif script is None:
            script = build_script(task, arm, memory, cell.condition, cell.seed)
        endpoint = ModelEndpoint(client, run_setup.model_image.tag, run_id, cell.cell_id, run_setup.model, script,
                                 run_setup.allow_hosts, max_output_tokens, guard_image=images.base.tag)
        endpoint.open_network(attempt)
        return endpoint

    @classmethod
    def bundle_entries(cls, arm: ArmSpec, agent_config: dict) -> list:
        # Its MCP servers travel in the verified bundle.
        return [Entry("agent/mcp.json", json.dumps(mcp_config(arm, agent_config), indent=1).encode())]

    def cost(self, usage) -> float | None:
        return self.setup.run_setup.price.cost(usage)

    def command(self, prompt: str) -> list[str]:
        return ["claude", "-p", prompt, "--output-format", "stream-json", "--verbose", "--model", self.model,
                "--mcp-config", MCP_CONFIG, "--strict-mcp-config",
                "--allowedTools", ",".join(allowed_tools(self.arm)),
                "--disallowedTools", ",".join(DISALLOWED_TOOLS),
                "--append-system-prompt", self.instructions,
                *(["--max-turns", str(self.setup.limits.max_turns)] if self.setup.limits.max_turns else [])]

    def run(self, sandbox: Sandbox, prompt: str) -> Transcript:
        transcript = Transcript(agent=NAME, model=self.model)
        transcript.add("launch", allowed_tools=allowed_tools(self.arm), disallowed_tools=list(DISALLOWED_TOOLS),
                       env_names=sorted({**SESSION_ENV, **self.endpoint_env}), prompt_sha256=sha256_bytes(prompt.encode()),
                       instructions_sha256=sha256_bytes(self.instructions.encode()))
        started = time.monotonic()
        result = sandbox.exec(self.command(prompt), timeout=self.setup.agent_seconds, workdir=WORKSPACE,
                              env={**SESSION_ENV, **self.endpoint_env})
        with gzip.open(self.raw_path, "wt", encoding="utf-8") as f:
            f.write(result.stdout + ("\n" if result.stdout else ""))
        session = parse_stream(line for _, line in result.lines)
        for kind, data in transcript_events(session):
            transcript.add(kind, **data)
        record_truncation(transcript, result)
        t_init = None if session.init_line is None else result.lines[session.init_line][0]
        t_result = None if session.result_line is None else result.lines[session.result_line][0]
        self.timings = {"cli_to_init": None if t_init is None else round(t_init - started, 3),
                        "session": None if t_init is None or t_result is None else round(t_result - t_init, 3),
                        "exec": round(result.seconds, 3)}
        transcript.usage = session.usage
        transcript.output = str((session.result or {}).get("result") or "")
        transcript.cli_cost_usd = session.cli_cost_usd
        transcript.error_class, transcript.error = classify(session, result.timed_out, result.exit_code, result.stderr,
                                                            self.setup.agent_seconds)
        transcript.is_error = transcript.error_class not in (None, BUDGET_EXHAUSTED)
        transcript.ended = ended(transcript.error_class, result.exit_code)
        return transcript


def ended(error_class: str | None, exit_code: int | None) -> str:
    """How the session ended (Transcript.ended), from classify's error class: whichever, it is scored; a model the
    gateway saw fail is the gate's to discard (model_reached), never the CLI's word."""
    if error_class is None:
        return ENDED_OK
    return {"session_timeout": ENDED_TIMEOUT, BUDGET_EXHAUSTED: ENDED_CAPPED}.get(
        error_class, ENDED_EXIT_NONZERO if error_class == "no_result" and exit_code else ENDED_ERROR)


def classify(session: StreamSession, timed_out: bool, exit_code: int | None, stderr: str,
             agent_seconds: float) -> tuple[str | None, str | None]:
    """(error_class, error) of a finished session; (None, None) when it ended well. The result's
    `is_error` and `terminal_reason` decide, never its `subtype` (an API error still says success).
    Permission denials are not an error here: the gate judges those of memory tools."""
    if timed_out:
        return "session_timeout", f"the session was killed after {agent_seconds}s (never retried)"
    if session.result is None:
        return "no_result", f"claude exited {exit_code} without a result: {stderr.strip()[-300:]}"
    r = session.result
    if r.get("subtype") == "error_max_turns":
        return BUDGET_EXHAUSTED, f"the session reached its turn cap (--max-turns) after {r.get('num_turns')} turns"
    if r.get("is_error") or r.get("terminal_reason") not in ("completed", None):
        return "session_error", (f"is_error={r.get('is_error')}, terminal_reason={r.get('terminal_reason')}: "
                                 f"{str(r.get('result', ''))[:200]}")
    return None, None


# ---- a grid's claude-code setup -----------------------------------------------------------------

@dataclass(frozen=True)
class ClaudeCodeSetup:
    model: str
    price: Price
    pin: ClaudeCodePin
    model_image: ImageRef
    agent_images: dict  # base image id -> the claude-code layer over it
    allow_hosts: tuple[str, ...] = ()

    def inputs(self) -> dict[str, str]:
        """What defines a claude-code cell beyond its coordinates (part of its id)."""
        return {"model": self.model, "cli": self.pin.integrity, "model_image": self.model_image.id}

    def lock_entries(self) -> dict:
        """What run.json records of this agent's setup: the CLI pin and images, and the model's price."""
        return {"claude_code": self.lock(), "prices": {self.model: vars(self.price)}}

    def lock(self) -> dict:
        return {"cli": self.pin.as_dict(), "model": self.model, "model_image": {"tag": self.model_image.tag, "id": self.model_image.id},
                "agent_images": {ref.tag: ref.id for ref in self.agent_images.values()},
                "allow_hosts": list(self.allow_hosts), "scripted": self.model == SCRIPTED}


def prepare_claude_code(client, grid, grid_path, images, arm_images: dict, log=print) -> ClaudeCodeSetup:
    """Everything a grid's claude-code cells need, checked before any cell runs: a model, its price
    (a live model without one is refused), a key for a live model, and the images."""
    if not grid.model:
        raise SpecError(grid_path, "model", "is missing: the claude-code agent needs a model",
                        "add model: scripted (the offline scripted model server, no spend) or a real model id, or pass --model")
    if grid.allow_hosts and grid.network != "allowlist":
        raise SpecError(grid_path, "allow_hosts", f"is set but network is '{grid.network}'",
                        "set network: allowlist, or remove allow_hosts")
    price = price_for(grid.model, grid.prices, grid_path)
    if grid.model != SCRIPTED and not live_api_key():
        raise UserError(f"model {grid.model}: ANTHROPIC_API_KEY is not set: fix: export it in the shell that runs memgrid "
                        "(it reaches only the model gateway sidecar, never the sandbox or the run folder), "
                        "or run --model scripted")
    if grid.model == SCRIPTED:
        log("claude-code runs on the scripted model server: offline, no spend (token counts are the server's "
            "estimates, priced at 0)")
    model_image = ensure_derived(client, "model", images.base, log)
    bases = [images.sandbox, *arm_images.values()]
    agent_images = {b.id: ensure_agent_image(client, b, log) for b in bases}
    return ClaudeCodeSetup(grid.model, price, load_pin(), model_image, agent_images,
                           tuple(grid.allow_hosts) if grid.network == "allowlist" else ())
