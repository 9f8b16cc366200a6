"""`memgrid images build` builds images side by side as far as their parents allow (runner/env/image_builds.py):
the scheduling without an engine, then the command on the real one."""

import os
import subprocess
import sys
import threading
import time

import pytest

from runner.env.image_builds import BuildStep, run_steps
from runner.env.images import ImageRef

from conftest import REPO


class Recorder:
    """Builders that take `seconds` each and record when each started and ended, and how many ran at once."""

    def __init__(self, seconds: float = 0.2):
        self.seconds, self.lock = seconds, threading.Lock()
        self.started: dict[str, float] = {}
        self.ended: dict[str, float] = {}
        self.running = self.most = 0

    def step(self, key: str, after: tuple[str, ...] = (), fails: bool = False) -> BuildStep:
        def build(refs: dict[str, ImageRef]) -> ImageRef:
            with self.lock:
                self.started[key] = time.monotonic()
                self.running += 1
                self.most = max(self.most, self.running)
            try:
                assert set(after) <= set(refs), (key, sorted(refs))  # given its parents' images
                time.sleep(self.seconds)
                if fails:
                    raise RuntimeError(f"{key} failed")
                return ImageRef(key, f"memgrid-{key}:x", f"sha256:{key}")
            finally:
                with self.lock:
                    self.running -= 1
                    self.ended[key] = time.monotonic()
        return BuildStep(key, after, build)


def tree(r: Recorder) -> list[BuildStep]:
    """The shape of the real plan: a base, three images over it, two arms over one of them, a layer over each."""
    return [r.step("cli"), r.step("base"), *(r.step(k, ("base",)) for k in ("sandbox", "checker", "model")),
            *(r.step(k, ("sandbox",)) for k in ("arm-a", "arm-b")),
            *(r.step(f"layer-{p}", (p, "cli")) for p in ("sandbox", "arm-a", "arm-b"))]


@pytest.mark.parametrize("jobs", [1, 3])
def test_each_step_starts_after_its_parents_and_at_most_jobs_run_at_once(jobs):
    r = Recorder()
    steps = tree(r)
    built = run_steps(steps, jobs)
    assert list(built) == [s.key for s in steps] and all(b.ref.role == k for k, b in built.items())
    for s in steps:
        assert all(r.ended[a] <= r.started[s.key] for a in s.after), s.key
    assert r.most == jobs  # one at a time is one at a time; three at a time does run three


def test_a_failed_build_stops_what_has_not_started_and_is_raised():
    r = Recorder()
    steps = [r.step("base"), r.step("sandbox", ("base",), fails=True), r.step("checker", ("base",)),
             r.step("arm", ("sandbox",)), r.step("layer", ("arm",))]
    with pytest.raises(RuntimeError, match="sandbox failed"):
        run_steps(steps, 3)
    assert "checker" in r.ended  # already running beside it: it ends, it is not cut
    assert "arm" not in r.started and "layer" not in r.started
    # one at a time, a step ready beside the failed one has not started either
    r = Recorder()
    with pytest.raises(RuntimeError, match="cli failed"):
        run_steps([r.step("cli", fails=True), r.step("base"), r.step("sandbox", ("base",))], 1)
    assert list(r.started) == ["cli"]


def test_a_plan_that_cannot_finish_is_refused():
    r = Recorder()
    with pytest.raises(ValueError, match="do not exist"):
        run_steps([r.step("arm", ("sandbox",))], 2)
    with pytest.raises(ValueError, match="wait on each other"):
        run_steps([r.step("a", ("b",)), r.step("b", ("a",))], 2)
    assert not r.started


def test_images_build_lists_every_image_of_the_plan_once(engine, images):
    """On an engine that has them (CI builds them first) the command only finds them: every image once, the CLI
    agents' own images among them."""
    from runner.agents.registry import cli_agents
    from runner.env.images import arm_image_needed
    from runner.plan.spec import load_all_arms

    proc = subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "images", "build", "--jobs", "2"],
                          capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "MEMGRID_ROOT": str(REPO), "COLUMNS": "300"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    arms = [f"arm:{a.name}" for a in load_all_arms(REPO).values() if arm_image_needed(a.root)]
    agents = [a.name for a in cli_agents()]
    expected = ["base", "sandbox", "checker", "model", "embedder", *arms, *(f"agent-cli:{a}" for a in agents),
                *(f"agent:{a}:{p}" for a in agents for p in ("sandbox", *arms))]
    roles = [line.split()[0] for line in proc.stdout.splitlines() if line.startswith(("base", "sandbox", "checker",
                                                                                       "model", "embedder", "arm:", "agent"))]
    assert sorted(roles) == sorted(expected)
    assert f"{len(expected)} images ready in" in proc.stdout and "2 at a time" in proc.stdout
