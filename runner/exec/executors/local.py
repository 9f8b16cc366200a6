"""The local executor: a thread pool on this machine's engine, `concurrency` cells at a time. When a cell
hands off its sandbox, the next cell's sandbox starts (trial.SandboxesAhead), so that its start overlaps
the earlier cell's checker."""

import sys
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from runner.env.sandbox import remove_run_containers
from runner.exec.executors.base import Executor, ExecutorSettings
from runner.exec.trial import SandboxesAhead, run_cell


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, ctx, concurrency: int):
        self.ctx, self.slots = ctx, concurrency
        self.pool = ThreadPoolExecutor(max_workers=concurrency)
        ctx.ahead = SandboxesAhead(ctx, lambda: self.upcoming())

    @classmethod
    def open(cls, ctx, settings: ExecutorSettings, cells: list) -> "LocalExecutor":
        return cls(ctx, settings.concurrency)

    def submit(self, cell, attempt: int):
        return self.pool.submit(run_cell, self.ctx, cell, attempt)

    def wait(self, handles, timeout: float) -> set:
        return wait(handles, timeout=timeout, return_when=FIRST_COMPLETED)[0]

    def result(self, handle, timeout: float | None = None):
        return handle.result(timeout=timeout)

    def remove_containers(self) -> None:
        remove_run_containers(self.ctx.client, self.ctx.run_id)

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        self.ctx.ahead.close()  # what no cell took (the run stopped, or its budget did)
        self.ctx.ahead = None
        # Every cell has removed what it started by now; whatever the engine still holds (a removal that
        # failed on a thread of its own, an endpoint it kept) goes here, and is named, so the run ends with
        # none of its containers or networks and a removal that goes wrong is seen.
        left = remove_run_containers(self.ctx.client, self.ctx.run_id)
        if left:
            print(f"memgrid: run {self.ctx.run_id}: removed at its end what its cells left: {', '.join(left)}",
                  file=sys.stderr)


EXECUTOR = LocalExecutor
