"""The LLM-free reference agents. They validate the harness itself and measure an arm's retrieval
without a model's judgment.

`floor` applies the task's naive reference (must score 0), `ceiling` the informed one (must score 1);
each delivers its reference through its own channel, recorded in the transcript with a digest,
never through the bundle. `reader` runs memgrid-reader in the sandbox with what its protocol hands
it through /sandbox/.reader.
"""


from runner.agents.base import ENDED_ERROR, ENDED_OK, Agent, Transcript, ending_of, record_truncation
from runner.digest import sha256_bytes
from runner.env.archive import Entry, pack
from runner.env.bundle import AGENT_UID, tree_entries
from runner.env.sandbox import Sandbox
from runner.plan.spec import TaskSpec


class ReferenceAgent(Agent):
    """Overlays one of the task's reference solutions on the workspace."""

    reference: str

    protocols = ("coding",)
    harness_code = True

    def run(self, sandbox: Sandbox, prompt: str) -> Transcript:
        transcript = Transcript(agent=self.name, model=None)
        transcript.add("init", tools=[], prompt_sha256=sha256_bytes(prompt.encode()))
        entries = tree_entries(self.setup.task.reference(self.reference), "workspace")
        archive = pack(entries, uid=AGENT_UID, gid=AGENT_UID)
        try:
            sandbox.put("/sandbox", archive)
        except Exception as e:  # memgrid's own agent failed: the gate turns it into a harness error
            transcript.is_error, transcript.error = True, f"applying {self.reference} reference failed: {e}"
        transcript.ended = ENDED_ERROR if transcript.is_error else ENDED_OK
        transcript.add("channel", name=f"reference:{self.reference}", sha256=sha256_bytes(archive),
                       files=[e.path.removeprefix("workspace/") for e in entries])
        transcript.add("result", is_error=transcript.is_error, error=transcript.error)
        return transcript


class FloorAgent(ReferenceAgent):
    name = "floor"
    reference = "naive"


class CeilingAgent(ReferenceAgent):
    name = "ceiling"
    reference = "informed"


def task_options(task: TaskSpec) -> dict[str, list[str]]:
    """What a scripted agent looks for in what it retrieved, in order: the fact's terms, then each
    wrong rule's markers; the reference solution of the same name is what it applies."""
    options = {"informed": list(task.fact_terms)}
    options.update({f"damaged/{c}": list(m) for c, m in sorted(task.wrong_rules.items())})
    return options


class ReaderAgent(Agent):
    """The LLM-free reader (images/sandbox/memgrid-reader): searches its arm's memory with the prompt and
    acts on the first result that answers its protocol's question (coding: names one of the task's
    options, whose solution it applies; two-session: holds the remembered key).

    What it looks for arrives through its own channel, /sandbox/.reader, handed over by the protocol
    and recorded in the transcript with a digest; none of it is in the bundle.
    """

    name = "reader"
    harness_code = True
    runs_hooks = True  # memgrid-reader's run_hooks
    mcp_client = True  # memgrid-reader's on_server
    mode: tuple[str, ...] | None = None  # memgrid-reader's mode; None: the one the protocol's channel names

    def run(self, sandbox: Sandbox, prompt: str) -> Transcript:
        transcript = Transcript(agent=self.name, model=None)
        channel = self.setup.channel
        archive = pack([Entry(f".reader/{e.path}", e.data, e.mode) for e in channel.entries], uid=AGENT_UID, gid=AGENT_UID)
        sandbox.put("/sandbox", archive)
        transcript.add("channel", name=f"reader:{channel.name}", sha256=sha256_bytes(archive), **channel.record)
        seconds = self.setup.agent_seconds
        result = sandbox.exec(["memgrid-reader", *(self.mode or channel.args)], timeout=seconds, workdir="/sandbox")
        transcript.add_printed(result.stdout)
        record_truncation(transcript, result)
        transcript.ended = ending_of(result, seconds)
        if result.exit_code != 0:  # memgrid's own agent failed: the gate turns it into a harness error
            transcript.is_error = True
            transcript.error = (f"memgrid-reader timed out after {seconds}s" if transcript.ended == "timeout"
                                else f"memgrid-reader exited {result.exit_code}: {result.stderr.strip()[-300:]}")
        return transcript


class ExtractiveAgent(ReaderAgent):
    """The LLM-free extractive answerer of the personal protocol (memgrid-reader --personal-extract): per question,
    the user's own statements in the records released to it that share the most words with the question. It answers
    any person's questions, a hosted benchmark's included (Memora's name no attributes, so the reader, which looks
    for a generated person's attribute values, answers none of them). Its blind spots are in memgrid-reader's help."""

    name = "extractive"
    protocols = ("personal",)
    runs_hooks = mcp_client = False
    mode = ("--personal-extract",)
