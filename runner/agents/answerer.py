"""The personal protocol's model answerer (`answerer`): a model answers each question from the records the search
released to it, asked with the hosted benchmark's own answer prompt (units.personal.AnswerPrompt: Memora's agent
track), or memgrid's documented default for generated persons.

The protocol renders each question's request on the controller (the prompt's text is the benchmark's, byte for
byte, and its digest is recorded per cell); the isolated answer container holds those requests and nothing else,
and `memgrid-answerer` sends them through the cell's model gateway: as OpenAI-compatible chat completions, the shape
the publishers' code sends (`answerer`), or as the Anthropic Messages requests they amount to (`answerer-anthropic`:
units.personal.as_messages_request, for a model reached through Anthropic's own API). The gateway
holds the key (the container a placeholder) and records every request and its usage, which the ledger's tokens and
cost are read from. Offline, `--model scripted` answers from the memories each prompt lists (the scripted model
server's answer mode).
"""

from dataclasses import dataclass

from runner.agents.base import Agent, Transcript, ending_of, record_truncation
from runner.agents.model_cli import gateway_usage, model_price
from runner.env.images import ImageRef, ensure_derived
from runner.env.model_endpoint import ModelEndpoint, is_scripted
from runner.env.sandbox import Sandbox
from runner.results.costs import Price

REQUESTS = "agent/model_requests.jsonl"  # in the answer bundle: one rendered request (or fixed answer) per question


@dataclass(frozen=True)
class AnswererSetup:
    """The grid's answer model, checked before any cell runs: its id, price and the sidecars' image."""
    model: str
    price: Price
    model_image: ImageRef
    api: str  # env.model_endpoint.APIS: the routes the gateway admits

    def inputs(self) -> dict[str, str]:
        """What defines the agent's cells beyond their coordinates (part of their ids)."""
        return {"model": self.model, "model_image": self.model_image.id}

    def lock_entries(self) -> dict:
        return {"answerer": {"model": self.model, "api": self.api, "scripted": is_scripted(self.model),
                             "model_image": {"tag": self.model_image.tag, "id": self.model_image.id}},
                "prices": {self.model: vars(self.price)}}


class ModelAnswerAgent(Agent):
    name = "answerer"
    needs_model = True
    protocols = ("personal",)
    turn_cap = False  # one request per question, no session to stop at a turn: a max_turns cap is refused by name
    independent_requests = True  # a request per question, none resending another's
    api = "chat"  # env.model_endpoint.APIS: the gateway admits POST /v1/chat/completions alone

    def __init__(self, setup):
        super().__init__(setup)
        self.endpoint_env = setup.endpoint.sandbox_env()

    @classmethod
    def prepare_grid(cls, client, grid, grid_path, images, arm_images: dict, log=print) -> AnswererSetup:
        return AnswererSetup(grid.model, model_price(cls.name, cls.api, grid, grid_path, log),
                             ensure_derived(client, "model", images.base, log), cls.api)

    @classmethod
    def open_endpoint(cls, client, run_setup, images, run_id: str, cell, task, arm, memory, attempt: int,
                      script: dict | None = None, max_output_tokens: int | None = None) -> ModelEndpoint:
        """The cell's own network with the gateway (and, offline, the scripted model answering as `script` says)."""
        endpoint = ModelEndpoint(client, run_setup.model_image.tag, run_id, cell.cell_id, run_setup.model,
                                 script if is_scripted(run_setup.model) else None, (), max_output_tokens,
                                 guard_image=images.base.tag, api=cls.api)
        endpoint.open_network(attempt)
        return endpoint

    def cost(self, usage) -> float | None:
        return self.setup.run_setup.price.cost(usage)

    def read_gateway(self, transcript: Transcript, gateway: list[dict]) -> None:
        """The tokens are the gateway's record of every reply's usage, outside the container."""
        transcript.usage = gateway_usage(gateway, self.api)

    def run(self, sandbox: Sandbox, prompt: str) -> Transcript:
        transcript = Transcript(agent=self.name, model=self.setup.run_setup.model)
        seconds = self.setup.agent_seconds
        result = sandbox.exec(["memgrid-answerer"], timeout=seconds, workdir="/sandbox", env=self.endpoint_env)
        transcript.add_printed(result.stdout)
        record_truncation(transcript, result)
        transcript.ended = ending_of(result, seconds)
        if result.exit_code != 0:  # a request that failed: its error is in the transcript and the gateway's record
            failed = next((e.get("error") for e in transcript.events if e["type"] == "model_error"), None)
            transcript.is_error = True
            transcript.error = (f"memgrid-answerer timed out after {seconds}s" if transcript.ended == "timeout" else
                                f"memgrid-answerer exited {result.exit_code}: {failed or result.stderr.strip()[-300:]}")
        return transcript


class MessagesAnswerAgent(ModelAnswerAgent):
    """The same answers asked through Anthropic's Messages API (POST /v1/messages, ANTHROPIC_API_KEY): each publisher's
    request as the Messages request it amounts to, rendered on the controller, so what is sent is what is recorded."""
    name = "answerer-anthropic"
    api = "anthropic"
