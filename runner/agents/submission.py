"""The `submission` agent: a benchmark submission's own answerer (Memora's `/app/answer.sh`).

It answers one request in a container of the submission's own image that holds nothing else in /sandbox
(runner/protocols/personal/submission.py starts one such container per question): it runs

    /app/answer.sh --input /sandbox/request.json --output /tmp/answer.json

as the sandbox user, and its transcript's output is the file it wrote, as the submission wrote it (the protocol
reads and checks it). Tokens are unobserved (None): a submission's model use is its own. A non-zero exit or a
timeout is recorded (the transcript's `ended`) and the question is scored as the submission left it: an agent
cannot choose to be discarded.
"""

from runner.agents.base import Agent, Transcript, ending_of, record_truncation
from runner.digest import sha256_bytes
from runner.env.sandbox import Sandbox

ANSWER_SCRIPT = "/app/answer.sh"
REQUEST = "/sandbox/request.json"
OUTPUT = "/tmp/answer.json"
OUTPUT_CAP = 4 * 1024 * 1024  # what is read of answer.json; the judges read at most a million characters of it


class SubmissionAgent(Agent):
    name = "submission"
    protocols = ("personal",)

    def run(self, sandbox: Sandbox, prompt: str) -> Transcript:
        transcript = Transcript(agent=self.name, model=None)
        command = [ANSWER_SCRIPT, "--input", REQUEST, "--output", OUTPUT]
        transcript.add("init", agent=self.name, command=command, tools=[])
        seconds = self.setup.agent_seconds
        result = sandbox.exec(command, timeout=seconds, workdir="/tmp")
        transcript.ended = ending_of(result, seconds)
        record_truncation(transcript, result)
        if result.exit_code != 0:
            transcript.is_error = True
            transcript.error = (f"answer.sh timed out after {seconds}s" if transcript.ended == "timeout"
                                else f"answer.sh exited {result.exit_code}: {result.stderr.strip()[-300:]}")
        else:
            transcript.output = sandbox.read_text(OUTPUT, OUTPUT_CAP)
        transcript.add("result", is_error=transcript.is_error, error=transcript.error, ended=transcript.ended,
                       exit_code=result.exit_code, stderr_tail=result.stderr[-1000:],
                       output_sha256=sha256_bytes(transcript.output.encode()))
        return transcript
