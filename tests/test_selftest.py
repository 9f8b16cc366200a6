"""`memgrid selftest` passes on this machine, and fails when a defence it checks is taken away."""

import os
import subprocess
import sys
from unittest import mock

from runner.env import model_endpoint

from runner.env import netguard

from runner.env import selftest
from runner.grading.canaries import TASK_AWARE, canaries_for_this_host
from runner.grading.gate import GateProof
from runner.env.images import ensure_derived

from conftest import REPO


def test_selftest_passes_every_check(engine, images, tmp_path):
    proc = subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "selftest",
                           "--runs-dir", str(tmp_path / "runs")], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "MEMGRID_ROOT": str(REPO), "COLUMNS": "300"})
    lines = [l for l in proc.stdout.splitlines() if l.startswith(("PASS", "FAIL"))]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    canaries = [c.name for c in (*canaries_for_this_host(), *TASK_AWARE)]  # slug_ids declares its entry
    total = 20 + len(canaries)
    assert len(lines) == total and all(l.startswith("PASS") for l in lines), "\n".join(lines)
    for name in (*canaries, "floor fails", "ceiling passes", "claude-code control admitted", "codex control admitted",
                 *(f"{agent} {canary}" for agent in ("claude-code", "codex")
                   for canary in ("server never attaches", "memory tool denied", "another arm's tools present")),
                 "claude-code tools deferred", "host unreachable", "no route out", "gateway forwards only",
                 "disk budget", "artifact cap", "links dropped", "output flood bounded",
                 "recall injection confirmed", "recall_fallback injection flagged"):
        assert any(name in l for l in lines), name
    assert f"{total} passed, 0 failed" in proc.stdout


def test_escape_probes_fail_without_the_network_guard(engine, images, run_id, tmp_path, no_leftovers):
    """The host probes are not a formality: with the guard a no-op they report the way out."""
    def no_guard(client, container, image, *, run_id, cell_id, name="host_unreachable"):
        return GateProof(name, True, "guard skipped")

    model_image = ensure_derived(engine, "model", images.base, log=lambda m: None)
    with mock.patch.object(netguard, "guard", no_guard), mock.patch.object(model_endpoint.netguard, "guard", no_guard):
        checks = {c.name: c for c in selftest.escape_checks(engine, images, model_image.tag, run_id, tmp_path)}
    assert not checks["host unreachable"].passed, checks["host unreachable"].saw
    assert "guarded reached 0" not in checks["host unreachable"].saw
    assert not checks["no route out"].passed
    assert checks["disk budget"].passed  # the others still hold: each check answers for its own defence
