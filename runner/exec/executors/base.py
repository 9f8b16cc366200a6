"""What the controller's scheduler needs from an executor: submit a cell attempt, wait for some to
finish, take a finished one's ledger row, and remove the run's containers wherever cells ran."""

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, ClassVar


@dataclass(frozen=True)
class ExecutorSettings:
    name: str = "local"
    concurrency: int = 2  # local: threads; dask: ignored (each worker's `cells` resource caps its own)
    scheduler: str | None = None  # dask: the scheduler's address, tcp://HOST:8786
    log: Callable[[str], None] = field(default=print, compare=False)


class Executor:
    name: ClassVar[str]
    slots: int  # how many cells the scheduler keeps in flight

    @classmethod
    def check(cls, settings: ExecutorSettings, protocol: str, where) -> None:
        """Refuse settings this executor cannot run, before any image, corpus or store is built."""

    @classmethod
    def open(cls, ctx, settings: ExecutorSettings, cells: list) -> "Executor":
        raise NotImplementedError

    def submit(self, cell, attempt: int):
        """Start one attempt of a cell; returns a handle for wait and result."""
        raise NotImplementedError

    def wait(self, handles, timeout: float) -> set:
        """The handles among these that have finished, waiting at most `timeout` for the first."""
        raise NotImplementedError

    def result(self, handle, timeout: float | None = None):
        """The finished attempt's LedgerRow, its cell folder already in the run folder. Raises the
        cell's Cancelled (the run is stopping) as run_cell does."""
        raise NotImplementedError

    def upcoming(self):
        """The cell the scheduler will submit next, or None (the scheduler replaces this)."""
        return None

    def cancel(self, handles) -> None:
        """Drop attempts not yet started (Ctrl-C)."""

    def remove_containers(self) -> None:
        """Remove the run's containers on every engine this executor runs cells on."""
        raise NotImplementedError

    def nodes(self) -> dict[str, tuple[int, int]]:
        """node -> (cells running, attempts returned), for the progress line; empty when there is one node."""
        return {}

    def stats(self) -> dict:
        """What the run's summary reports about the executor (cells per node, scheduling overhead)."""
        return {}

    def close(self) -> None:
        raise NotImplementedError

    @classmethod
    @contextmanager
    def store_builder(cls, settings: ExecutorSettings, engine, *, run_id: str, embedder, log):
        """Where the run's stores are ingested and how many at once: (runner.arms.ingest.StoreBuild, count).
        Here: this machine's engine (None: ingest's own default), the run's concurrency at a time."""
        yield None, settings.concurrency

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
