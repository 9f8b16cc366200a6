"""A case of a benchmark hosted as published, as the two-session protocol runs it, and how the benchmark's own judge
is asked about it: what a source format (runner/sources/traptask.py) hands the protocol."""

from dataclasses import dataclass


@dataclass(frozen=True)
class HostedCase:
    """One case of a hosted benchmark as a protocol of sessions runs it."""
    id: str
    title: str
    prompts: tuple[str, ...]  # one a session, exactly as the benchmark's own runner passes them
    digest: str  # what defines it: every file of the hosted benchmark, so any change is a new case
    secrets: tuple[str, ...]  # values no session's environment may hold (its gold), scrubbed by value
    # The expected answer as a value a reference agent (the reader, the scripted model) remembers in session 1, as
    # a model that derived it would; None: the benchmark states none, and only command agents play the case.
    reference: str | None = None


@dataclass(frozen=True)
class JudgeRequest:
    """The benchmark's own judge, run unchanged in the checker container: `oracle` entries (named oracle/...)
    readable by the judge alone, `artifact` entries (the session's output) under /artifact, its command."""
    oracle: tuple
    artifact: tuple
    command: tuple[str, ...]
    timeout_seconds: int
