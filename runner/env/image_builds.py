"""Every image memgrid ships (`memgrid images build`), built side by side as far as their parents allow.

The images form a tree: base; the sandbox, checker, model and embedder images over it; each arm's image over the
sandbox; each CLI agent's layer over the sandbox and over each arm image, copying its binary from the agent's own
image (fetched from npm, independent of the rest). Built one at a time, the host's pip and npm fetches, the context
uploads and the engine's build steps of one image wait for the one before; a step here starts as soon as its
parents are built, at most `jobs` at a time.
"""

import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from runner.env.images import DERIVED, ImageRef, ensure_arm_image, ensure_base, ensure_derived, find_image

# Every image from an empty engine (but the base) on a 2-core machine, the packages resolved again: 191 s one at a
# time, 128 s two at a time, 122 s three at a time (the builds' own seconds summed: 191, 255, 363). The engine's
# build steps, the host's pip and npm fetches and the context uploads wait on different things. `memgrid images
# build --jobs 1` is the comparison: it prints the wall time beside the builds' sum.
BUILDS_AT_ONCE = 3


@dataclass(frozen=True)
class BuildStep:
    key: str
    after: tuple[str, ...]  # the steps whose images this one needs, by key
    build: Callable[[dict[str, ImageRef]], ImageRef]  # given every built step's image, by key


@dataclass(frozen=True)
class Built:
    ref: ImageRef
    seconds: float


def run_steps(steps: list[BuildStep], jobs: int) -> dict[str, Built]:
    """Each step once its `after` steps are built, at most `jobs` at a time, in the order given among the ready
    ones; the first failure stops what has not started and is raised once the running steps end."""
    keys = {s.key for s in steps}
    unknown = [(s.key, a) for s in steps for a in s.after if a not in keys]
    if unknown:
        raise ValueError(f"build steps after steps that do not exist: {unknown}")
    done: dict[str, Built] = {}
    waiting = list(steps)
    running: dict[Future, BuildStep] = {}

    def timed(step: BuildStep, refs: dict[str, ImageRef]) -> Built:
        started = time.monotonic()
        ref = step.build(refs)
        return Built(ref, round(time.monotonic() - started, 1))

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        while waiting or running:
            ready = [s for s in waiting if all(a in done for a in s.after)]
            # no more than the pool runs: a step queued in it would still start after a failure
            for step in ready[:jobs - len(running)]:
                waiting.remove(step)
                running[pool.submit(timed, step, {k: b.ref for k, b in done.items()})] = step
            if not running:  # nothing runs and nothing could start
                raise ValueError(f"build steps wait on each other: {[s.key for s in waiting]}")
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                # a failure leaves the loop: nothing more starts, and the pool waits for the steps already running
                done[running.pop(future).key] = future.result()
    return {s.key: done[s.key] for s in steps}


def cli_image(client, agent, log) -> ImageRef:
    tag = agent.ensure_cli_image(client, agent.load_pin(), log)
    return ImageRef(f"agent-cli:{agent.name}", tag, find_image(client, tag).id)


def image_steps(client, arm_dirs: list[Path], agents: list, log=print) -> list[BuildStep]:
    """The plan of `memgrid images build`: every image, each after the images it is built over."""
    steps = [BuildStep(f"agent-cli:{a.name}", (), lambda refs, a=a: cli_image(client, a, log)) for a in agents]
    steps.append(BuildStep("base", (), lambda refs: ensure_base(client, log=log)))
    steps += [BuildStep(role, ("base",), lambda refs, role=role: ensure_derived(client, role, refs["base"], log=log))
              for role in (*DERIVED, "model", "embedder")]
    arms = [f"arm:{Path(d).name}" for d in arm_dirs]
    steps += [BuildStep(key, ("sandbox",), lambda refs, d=d: ensure_arm_image(client, d, refs["sandbox"], log=log))
              for key, d in zip(arms, arm_dirs)]
    steps += [BuildStep(f"agent:{a.name}:{parent}", (parent, f"agent-cli:{a.name}"),
                        lambda refs, a=a, parent=parent: a.ensure_image(client, refs[parent], log=log))
              for a in agents for parent in ("sandbox", *arms)]
    return steps
