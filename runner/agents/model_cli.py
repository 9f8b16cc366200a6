"""What every agent that is a real CLI on a model has in common (Harbor's installed agent): a CLI pinned on the
npm registry and layered over the image a cell runs in, a model named by the grid (the scripted model server
offline, a provider's model live, priced), the cell's own network with the model gateway, and the cost of a
session from its usage. claude-code and codex are subclasses; each says which CLI, which model API and how a
session runs.
"""

import gzip
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from runner.agents.base import (BUDGET_EXHAUSTED, ENDED_CAPPED, ENDED_ERROR, ENDED_EXIT_NONZERO, ENDED_OK,
                                ENDED_TIMEOUT, Agent, Transcript, Usage)
from runner.agents.npm_pin import NpmPin, fetch_files, load_pin
from runner.agents.script import build_script
from runner.arms.kinds import WORKSPACE
from runner.digest import sha256_bytes, sha256_json
from runner.env.images import AGENT_LAYER, ImageRef, build_image, ensure_derived, find_image
from runner.env.model_endpoint import ModelEndpoint, is_scripted, live_api_key
from runner.env.sandbox import Sandbox
from runner.errors import SpecError, UserError
from runner.results.costs import Price, price_for


def ended(error_class: str | None, exit_code: int | None) -> str:
    """How the session ended (Transcript.ended), from the CLI's error class: whichever, it is scored; a model the
    gateway saw fail is the gate's to discard (model_reached), never the CLI's word."""
    if error_class is None:
        return ENDED_OK
    return {"session_timeout": ENDED_TIMEOUT, BUDGET_EXHAUSTED: ENDED_CAPPED}.get(
        error_class, ENDED_EXIT_NONZERO if error_class == "no_result" and exit_code else ENDED_ERROR)


def model_price(agent: str, api: str, grid, grid_path, log=print) -> Price:
    """The grid's model, checked for an agent that needs one (named; a live one priced and its key set), and its price."""
    if not grid.model:
        raise SpecError(grid_path, "model", f"is missing: the {agent} agent needs a model",
                        "add model: scripted (the offline scripted model server, no spend) or a real model id, or pass --model")
    price = price_for(grid.model, grid.prices, grid_path)
    if not is_scripted(grid.model) and not live_api_key(api):
        raise UserError(f"model {grid.model}: {ModelEndpoint.key_env(api)} is not set: fix: export it in the shell "
                        "that runs memgrid (it reaches only the model gateway sidecar, never the sandbox or the run "
                        "folder), or run --model scripted")
    if is_scripted(grid.model):
        log(f"{agent} runs on {grid.model}, a model of the scripted model server: offline, no spend (token counts are "
            "the server's estimates, priced at 0)")
    return price


@dataclass(frozen=True)
class ModelCliSetup:
    """A grid's setup of one CLI agent, checked before any cell runs."""
    agent: str
    lock_key: str  # its entry in run.json ("claude_code", "codex")
    cli_input: str  # its CLI pin's key among a cell's agent inputs
    model: str
    price: Price
    pin: NpmPin
    model_image: ImageRef
    agent_images: dict  # base image id -> the agent's layer over it
    allow_hosts: tuple[str, ...] = ()

    def inputs(self) -> dict[str, str]:
        """What defines the agent's cells beyond their coordinates (part of their ids)."""
        return {"model": self.model, self.cli_input: self.pin.integrity, "model_image": self.model_image.id}

    def lock_entries(self) -> dict:
        """What run.json records of this agent's setup: the CLI pin and images, and the model's price."""
        return {self.lock_key: self.lock(), "prices": {self.model: vars(self.price)}}

    def lock(self) -> dict:
        return {"cli": self.pin.as_dict(), "model": self.model, "model_image": {"tag": self.model_image.tag, "id": self.model_image.id},
                "agent_images": {ref.tag: ref.id for ref in self.agent_images.values()},
                "allow_hosts": list(self.allow_hosts), "scripted": is_scripted(self.model)}


class ModelCliAgent(Agent):
    """The base of the CLI agents. A subclass sets the class attributes below and implements `run`."""
    needs_model = True
    mcp_client = True  # the CLI connects to the MCP servers of its config and lists their tools at init
    protocols = ("coding", "two-session", "planted")  # the protocols the scripted model has a script for
    context: ClassVar[Path]  # images/<agent>/: its Dockerfile and pin.yaml
    members: ClassVar[dict[str, str]]  # the files its layer takes from the pinned tarball: path in it -> name
    api: ClassVar[str]  # the model API its CLI speaks (env.model_endpoint.APIS)
    lock_key: ClassVar[str]
    cli_input: ClassVar[str]
    core_tools: ClassVar[tuple[str, ...]]  # the gate proves the model was offered these beside the arm's memory tools
    session_env: ClassVar[dict[str, str]]  # the session's whole environment, besides the model endpoint's
    raw_name: ClassVar[str]  # the file in the cell's record folder its raw stream is kept in (gzip)

    def __init__(self, setup):
        super().__init__(setup)
        self.arm, self.model = setup.arm, setup.run_setup.model
        self.instructions = setup.instructions
        self.endpoint_env = setup.endpoint.sandbox_env()

    @classmethod
    def load_pin(cls) -> NpmPin:
        return load_pin(cls.context)

    @classmethod
    def cli_image_tag(cls, pin: NpmPin) -> str:
        """The agent's own image: its pinned binary alone. The pin names the binary (its checksum was verified at
        fetch), so the large file is not re-hashed."""
        dockerfile = sha256_bytes((cls.context / "Dockerfile").read_bytes())
        return f"memgrid-{cls.name}-cli:{sha256_json({'dockerfile': dockerfile, 'pin': pin.integrity})[:12]}"

    @classmethod
    def image_tag(cls, base: ImageRef, pin: NpmPin) -> str:
        layer = sha256_bytes((AGENT_LAYER / "Dockerfile").read_bytes())
        return f"memgrid-{cls.name}:{sha256_json({'cli': cls.cli_image_tag(pin), 'layer': layer, 'parent': base.id})[:12]}"

    @classmethod
    def ensure_cli_image(cls, client, pin: NpmPin, log=print) -> str:
        """The agent's own image (built once per pin: the only build the binary is sent to the engine for); its tag."""
        tag = cls.cli_image_tag(pin)
        if find_image(client, tag) is None:
            fetch_files(pin, cls.context, cls.members, log)
            log(f"building {tag} ({pin.package} {pin.version})")
            build_image(client, cls.context, tag, {}, {"memgrid.role": "agent-cli", "memgrid.agent": cls.name},
                        f"see images/{cls.context.name}/Dockerfile")
        return tag

    @classmethod
    def ensure_image(cls, client, base: ImageRef, log=print) -> ImageRef:
        """The agent's layer over `base` (the sandbox image or an arm's own): its binary copied from its own image."""
        pin = cls.load_pin()
        tag = cls.image_tag(base, pin)
        image = find_image(client, tag)
        if image is None:
            cli = cls.ensure_cli_image(client, pin, log)
            log(f"building {tag}: {cli} over {base.tag}")
            image = build_image(client, AGENT_LAYER, tag, {"BASE": base.tag, "CLI": cli},
                                {"memgrid.role": "agent", "memgrid.agent": cls.name}, f"see images/{AGENT_LAYER.name}/Dockerfile")
        return ImageRef(f"agent:{cls.name}:{base.role}", tag, image.id)

    @classmethod
    def prepare_grid(cls, client, grid, grid_path, images, arm_images: dict, log=print) -> ModelCliSetup:
        """Everything the grid's cells of this agent need: a model, its price (a live model without one is
        refused), a key for a live model, and the images."""
        if grid.allow_hosts and grid.network != "allowlist":
            raise SpecError(grid_path, "allow_hosts", f"is set but network is '{grid.network}'",
                            "set network: allowlist, or remove allow_hosts")
        price = model_price(cls.name, cls.api, grid, grid_path, log)
        model_image = ensure_derived(client, "model", images.base, log)
        bases = [images.sandbox, *arm_images.values()]
        agent_images = {b.id: cls.ensure_image(client, b, log) for b in bases}
        return ModelCliSetup(cls.name, cls.lock_key, cls.cli_input, grid.model, price, cls.load_pin(), model_image,
                             agent_images, tuple(grid.allow_hosts) if grid.network == "allowlist" else ())

    @classmethod
    def image(cls, run_setup, base):
        return run_setup.agent_images[base.id]

    @classmethod
    def open_endpoint(cls, client, run_setup, images, run_id: str, cell, task, arm, memory, attempt: int,
                      script: dict | None = None, max_output_tokens: int | None = None) -> ModelEndpoint:
        """The cell's own network, open, for the model gateway (and, offline, the scripted model playing this
        session: the protocol's script for it, or a coding task's); the caller starts the sidecars on it
        (`start_sidecars`) while the sandbox starts."""
        if not is_scripted(run_setup.model):
            script = None
        elif script is None:
            script = build_script(task, arm, memory, cell.condition, cell.seed)
        endpoint = ModelEndpoint(client, run_setup.model_image.tag, run_id, cell.cell_id, run_setup.model, script,
                                 run_setup.allow_hosts, max_output_tokens, guard_image=images.base.tag, api=cls.api)
        endpoint.open_network(attempt)
        return endpoint

    def cost(self, usage) -> float | None:
        return self.setup.run_setup.price.cost(usage)

    def read_gateway(self, transcript: Transcript, gateway: list[dict]) -> None:
        """The session's tokens as the gateway recorded each response's usage, outside the sandbox, in place of the
        CLI's own count: that is its result line (or last usage event), printed where a model's shell can print one
        too (the CLI's stdout, through /proc), and a forged one understated the session's cost. The CLI's count
        stays in the transcript (`cli_usage`) when it differs."""
        counted = gateway_usage(gateway, self.api)
        if counted != transcript.usage:
            transcript.add("cli_usage", **vars(transcript.usage))
        transcript.usage = counted

    def command(self, prompt: str) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return {**self.session_env, **self.endpoint_env}

    def launch(self, transcript: Transcript, prompt: str, **how) -> None:
        """The launch event: how the CLI is run, the names of its environment, and digests of its prompt and
        instruction (never their text: the transcript is read beside other arms' cells)."""
        transcript.add("launch", **how, env_names=sorted(self.env()), prompt_sha256=sha256_bytes(prompt.encode()),
                       instructions_sha256=sha256_bytes(self.instructions.encode()))

    def exec_session(self, sandbox: Sandbox, prompt: str):
        """The CLI's session in the sandbox, bounded by the cell's time; its raw stdout kept in the record folder."""
        result = sandbox.exec(self.command(prompt), timeout=self.setup.agent_seconds, workdir=WORKSPACE, env=self.env())
        with gzip.open(self.setup.record_dir / self.raw_name, "wt", encoding="utf-8") as f:
            f.write(result.stdout + ("\n" if result.stdout else ""))
        return result

    @classmethod
    def reply(cls, record_dir: Path) -> str | None:
        raw = record_dir / cls.raw_name
        if not raw.is_file():
            return None
        with gzip.open(raw, "rt", encoding="utf-8", errors="replace") as f:
            return cls.final_reply(line.rstrip("\n") for line in f)

    @staticmethod
    def final_reply(lines) -> str:
        """The session's last answer, from the CLI's stdout lines (its raw stream)."""
        raise NotImplementedError

    @staticmethod
    def conclude(transcript: Transcript, error_class: str | None, error: str | None, exit_code: int | None) -> None:
        """The session's error class (the CLI's classify) and how it ended."""
        transcript.error_class, transcript.error = error_class, error
        transcript.is_error = error_class not in (None, BUDGET_EXHAUSTED)
        transcript.ended = ended(error_class, exit_code)


def gateway_usage(gateway: list[dict], api: str) -> Usage:
    """The tokens of every model response the gateway recorded, in the ledger's classes: Anthropic counts cache reads
    and writes apart from its input_tokens, OpenAI counts cached input inside them."""
    fresh = read = written = output = 0
    for entry in gateway:
        usage = entry.get("usage") if entry.get("kind") == "model" else None
        if not usage:
            continue
        output += usage.get("output_tokens", 0)
        if api in ("openai", "chat"):
            cached = usage.get("cached_tokens", 0)
            fresh, read = fresh + usage.get("input_tokens", 0) - cached, read + cached
        else:
            fresh += usage.get("input_tokens", 0)
            read += usage.get("cache_read_input_tokens", 0)
            written += usage.get("cache_creation_input_tokens", 0)
    return Usage(fresh_input=fresh, cache_read=read, cache_creation=written, output=output)

