"""Executors run a run's cells: `local` (threads on this machine's engine) or `dask` (workers on other
nodes, each with its own engine). The controller, whatever the executor, writes the run folder and the
ledger. An executor is one module here, named in EXECUTORS; it is imported only when a grid names it,
so `local` never imports a distributed stack."""

import importlib

from runner.errors import SpecError, UserError
from runner.exec.executors.base import Executor, ExecutorSettings

EXECUTORS = {"local": "runner.exec.executors.local", "dask": "runner.exec.executors.dask"}
DEFAULT = "local"


def executor_class(name: str, where="--executor") -> type[Executor]:
    if name not in EXECUTORS:
        raise SpecError(where, "executor", f"'{name}' is not an executor memgrid has", f"use one of: {', '.join(EXECUTORS)}")
    try:
        return importlib.import_module(EXECUTORS[name]).EXECUTOR
    except ImportError as e:  # an optional extra that is not installed
        raise UserError(f"{where}: the {name} executor needs {e.name}, which is not installed: fix: "
                        f"pip install 'memgrid[{name}]'") from None


def open_executor(ctx, settings: ExecutorSettings, cells: list) -> Executor:
    """The executor the settings name, ready for these cells (a distributed one has checked its nodes)."""
    return executor_class(settings.name).open(ctx, settings, cells)


__all__ = ["EXECUTORS", "DEFAULT", "Executor", "ExecutorSettings", "executor_class", "open_executor"]
