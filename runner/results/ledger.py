"""The ledger: one row per cell attempt, durable before the next cell starts.

Rows are appended to ledger.jsonl (one JSON object per line, flushed and fsynced), a plain
file a person can open. A kill -9 can leave at most a torn last line, which `open` cuts off:
that cell was in flight and reruns. `compact` writes ledger.parquet atomically from the journal.
"""

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import pyarrow as pa


@dataclass
class LedgerRow:
    run_id: str
    cell_id: str
    attempt: int
    final: bool  # False: a harness failure; resume reruns the cell
    task: str
    arm: str
    seed: int
    condition: str
    agent: str
    order_index: int
    model: str | None
    sandbox_image: str
    checker_image: str
    bundle_digest: str | None
    store_digest: str | None
    started_at: str
    ended_at: str
    wall_seconds: float
    admitted: bool
    discard_reason: str | None
    gate_proofs: str  # JSON list of {name, passed, detail}
    checker_passed: bool | None  # None: not graded (discarded, or the artifact was refused)
    checker_exit_code: int | None
    checker_detail: str | None
    checker_seconds: float | None
    outcome: str | None  # solved | damaged | neutral_failure | ambiguous; None when not scored
    damage_fired: str | None  # JSON list of conditions the damage detector recognised; None: not run or no report
    tokens_fresh_input: int | None
    tokens_cache_read: int | None
    tokens_cache_creation: int | None
    tokens_output: int | None
    cost_usd: float | None  # the four token classes at the run's prices; None when unpriced or unobserved
    cli_cost_usd: float | None  # the CLI's own figure, unverified: kept, never used as the cost
    timings: str | None  # JSON: seconds per phase (sidecars_start, container_start, cli_to_init, session)
    error_class: str | None
    error_detail: str | None
    protocol: str = "coding"  # what the cell is (memgrid protocol list)
    result: str | None = None  # JSON: the protocol's own result record (two-session: score, judge's reason, gold)
    # How the agent's session ended (agents.base.ENDINGS: ok, exit_nonzero, timeout, error, capped); every ending is
    # scored. None: no agent ran (discarded before it started, a harness error; rows written before the column).
    # Over several sessions (two-session), the first that did not end ok.
    agent_ended: str | None = None


_ARROW_TYPES = {
    str: pa.string(), str | None: pa.string(), int: pa.int64(), int | None: pa.int64(),
    bool: pa.bool_(), bool | None: pa.bool_(), float: pa.float64(), float | None: pa.float64(),
}
SCHEMA = pa.schema([pa.field(f.name, _ARROW_TYPES[f.type]) for f in fields(LedgerRow)])
COLUMNS = [f.name for f in fields(LedgerRow)]


class Ledger:
    def __init__(self, run_dir: Path):
        self.journal = run_dir / "ledger.jsonl"
        self.parquet = run_dir / "ledger.parquet"

    def open(self) -> int:
        """Create the journal or cut a torn last line; returns the bytes cut."""
        if not self.journal.exists():
            self.journal.touch()
            return 0
        data = self.journal.read_bytes()
        if not data or data.endswith(b"\n"):
            return 0
        keep = data.rfind(b"\n") + 1
        with open(self.journal, "r+b") as f:
            f.truncate(keep)
            f.flush()
            os.fsync(f.fileno())
        return len(data) - keep

    def append(self, row: LedgerRow) -> None:
        data = (json.dumps(asdict(row), sort_keys=True) + "\n").encode()
        fd = os.open(self.journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            start = os.fstat(fd).st_size
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            except OSError as e:
                # A disk that filled up mid-line: the journal goes back to its last whole line, so no later append
                # (the cells a stopping run still records) is glued to this one's head.
                os.ftruncate(fd, start)
                raise OSError(e.errno, e.strerror, str(self.journal)) from None
        finally:
            os.close(fd)

    def rows(self) -> list[dict]:
        if not self.journal.exists():
            return []
        out = []
        with open(self.journal, encoding="utf-8") as f:
            for line in f:
                if line.endswith("\n"):  # a torn last line is a cell still in flight
                    out.append(json.loads(line))
        return out

    def saved_rows(self) -> list[dict]:
        """The journal's rows; from a copied run folder that carries only the compacted ledger, the parquet's."""
        if self.journal.is_file() or not self.parquet.is_file():
            return self.rows()
        import pyarrow.parquet as pq

        return pq.read_table(self.parquet).to_pylist()

    def compact(self) -> Path:
        import pyarrow.parquet as pq  # only here: the controller need not carry the parquet writer

        rows = self.rows()
        table = pa.Table.from_pylist([{c: r.get(c) for c in COLUMNS} for r in rows], schema=SCHEMA)
        tmp = self.parquet.with_suffix(".parquet.tmp")
        pq.write_table(table, tmp)
        os.replace(tmp, self.parquet)
        return self.parquet


def finished_cells(rows: list[dict]) -> set[str]:
    return {r["cell_id"] for r in rows if r["final"]}


def latest_attempts(rows: list[dict]) -> dict[str, dict]:
    latest: dict[str, dict] = {}
    for r in rows:
        if r["cell_id"] not in latest or r["attempt"] >= latest[r["cell_id"]]["attempt"]:
            latest[r["cell_id"]] = r
    return latest


def agent_error_counts(rows: list[dict]) -> list[tuple[str, str, int, int, str]]:
    """Per agent x arm of final rows: admitted cells, those whose agent ended with an error (exit_nonzero, timeout,
    error: scored as they ended, never discarded), and how many of each; only groups with any."""
    from runner.agents.base import ERROR_ENDINGS  # here: the ledger itself depends on no agent

    admitted: dict[tuple[str, str], int] = {}
    endings: dict[tuple[str, str], dict[str, int]] = {}
    for r in rows:
        if not r.get("final", True) or not r.get("admitted"):
            continue
        key = (r["agent"], r["arm"])
        admitted[key] = admitted.get(key, 0) + 1
        if r.get("agent_ended") in ERROR_ENDINGS:
            by = endings.setdefault(key, {})
            by[r["agent_ended"]] = by.get(r["agent_ended"], 0) + 1
    return [(agent, arm, admitted[(agent, arm)], sum(by.values()), ", ".join(f"{e} {n}" for e, n in sorted(by.items())))
            for (agent, arm), by in sorted(endings.items())]
