"""Every module imports on its own, in a fresh interpreter: no circular import hides behind import order.

Each module is imported in a child forked from one interpreter that has loaded only third-party libraries
(no `runner` module): alone as far as memgrid's modules go, without paying pandas' and scipy's import in
each of ninety interpreters. `test_layers.py` proves the same from the source; this proves it by running it."""

import subprocess
import sys
from pathlib import Path

from test_layers import module_files

REPO = Path(__file__).resolve().parent.parent

# Forks a child per module; the child imports it and exits 0, or prints the error's last line and exits 1.
ZYGOTE = """
import importlib, os, sys, traceback
import docker, jsonschema, numpy, pandas, pyarrow, rich, scipy.stats, statsmodels.api, typer, yaml
assert not [m for m in sys.modules if m == "runner" or m.startswith("runner.")]
failed = 0
for name in sys.argv[1:]:
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
        except BaseException:
            print(name + ": " + traceback.format_exc().strip().splitlines()[-1], flush=True)
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    failed += status != 0
print("imported", len(sys.argv) - 1 - failed, "of", len(sys.argv) - 1)
"""


def modules() -> list[str]:
    return list(module_files(REPO))


def import_each(names: list[str], cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", ZYGOTE, *names], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_every_module_imports_alone():
    names = modules()
    assert len(names) > 50 and "runner.protocols.two_session.protocol" in names
    result = import_each(names)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith(f"imported {len(names)} of {len(names)}"), result.stdout


def test_a_module_that_cannot_import_alone_is_named(tmp_path):
    """The check can fail: two modules that import each other's names at the top, imported one at a time."""
    package = tmp_path / "cyc"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from cyc.b import B\nA = 1\n")
    (package / "b.py").write_text("from cyc.a import A\nB = 2\n")
    result = import_each(["cyc.a", "cyc.b"], cwd=tmp_path)
    assert "cyc.a: ImportError" in result.stdout and "cyc.b: ImportError" in result.stdout, result.stdout
    assert result.stdout.strip().endswith("imported 0 of 2"), result.stdout
