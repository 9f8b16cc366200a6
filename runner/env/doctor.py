"""`memgrid doctor`: what this machine lacks for a run, each with the exact fix."""

import shutil
from dataclasses import dataclass
from pathlib import Path

import docker.errors

from runner.env.engine import connect
from runner.errors import EngineError
from runner.env.images import DERIVED, ImageRef, base_tag, derived_tag, existing_arm_image, find_image
from runner.env.containers import RUN_LABEL

# Below this much free space a grid may stop half-way: the run folder takes each cell's artifact (up
# to its task's cap, 64 MiB by default) and transcripts, and the engine's data root holds the images
# (about 2 GiB) and every cell's container until it is removed. Sandboxes' own writes are memory
# (their disk budget is tmpfs), so they do not count here.
MIN_FREE_GB = 5
WHY_FREE = "the run folder keeps each cell's artifact and transcripts; the engine keeps images and containers: " \
           "remove old runs/ folders, 'docker image prune', or pass --runs-dir on a larger disk"


def free_space(client, runs_dir: Path) -> list[tuple[str, Path, float]]:
    """(check name, place, free GiB) for the run folder's file system and, when the engine runs on this
    machine, its data root's."""
    places = [("disk (run folder)", runs_dir if runs_dir.exists() else Path.cwd())]
    try:
        root = Path(client.info().get("DockerRootDir", ""))
    except docker.errors.APIError:
        root = None
    if root is not None and root.is_dir():
        places.append(("disk (engine data root)", root))
    return [(name, path, shutil.disk_usage(path).free / 2**30) for name, path in places]


def space_warnings(client, runs_dir: Path) -> list[str]:
    """One line per place short of space, for `grid` to print before it starts."""
    return [f"warning: only {free_gb:.1f} GiB free at {path} (below {MIN_FREE_GB} GiB): {WHY_FREE}"
            for _, path, free_gb in free_space(client, runs_dir) if free_gb < MIN_FREE_GB]


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    needed_by: str = ""  # which grids need it: "the default grid", or the arm, agent or protocol that does
    # Whether a failure stops the grids that need it. An image a grid lacks is built by its first run (prepare_run),
    # so a missing image only costs that run time; an engine that does not answer or a full disk stop it.
    blocking: bool = True
    unmet: str = "missing"  # the status when not ok: "missing", or what a row that stops no grid is ("not built")

    @property
    def status(self) -> str:
        return "ok" if self.ok else self.unmet


DEFAULT_GRID = "the default grid"
EVERY_GRID = "every grid"
BUILT_FIRST = "built by the first grid that needs it (minutes), or memgrid images build (every image)"


def image_check(name: str, ref, tag: str, needed_by: str, note: str = "", fix_note: str = "") -> Check:
    """An image's row: its tag when it is there; else its name alone (the tag of an image not yet built depends on
    what its build folder holds when it is built, so a tag named now may never exist) and who builds it. `note`
    follows the detail, `fix_note` the fix."""
    if ref is not None:
        return Check(name, True, tag + note, "", needed_by, blocking=False)
    fix = ("built by the first make grid" if needed_by == DEFAULT_GRID else BUILT_FIRST) + fix_note
    return Check(name, False, tag.split(":")[0] + note, fix, needed_by, blocking=False, unmet="not built")


def run_checks(runs_dir: Path, root: Path, default: set[str] = frozenset()) -> list[Check]:
    """`default`: the image names the default grid builds (`memgrid grid --check` lists them; exec.check)."""
    checks = []
    try:
        client = connect(timeout=15)
    except EngineError as e:
        return [Check("engine", False, str(e).split(": fix:")[0], "sudo scripts/ensure-engine.sh", EVERY_GRID)]
    version = client.version()
    checks.append(Check("engine", True, f"Docker {version.get('Version')} (API {version.get('ApiVersion')})", "", EVERY_GRID))
    needs = {"model": "claude-code, codex and model judges", "embedder": "arms that embed through the shared embedder"}
    base = find_image(client, base_tag())
    checks.append(image_check("image base", base, base_tag(), DEFAULT_GRID))
    found = {}
    for role in (*DERIVED, "model", "embedder"):
        found[role] = find_image(client, derived_tag(role, base.id)) if base is not None else None
        checks.append(image_check(f"image {role}", found[role], derived_tag(role, base.id) if base else f"memgrid-{role}",
                                  DEFAULT_GRID if f"memgrid-{role}" in default else needs.get(role, DEFAULT_GRID)))
    sandbox = ImageRef("sandbox", derived_tag("sandbox", base.id), found["sandbox"].id) if found["sandbox"] else None
    arms_dir = root / "arms"
    for arm_dir in sorted(p.parent for p in arms_dir.glob("*/Dockerfile")) if arms_dir.is_dir() else []:
        ref = existing_arm_image(client, arm_dir, sandbox) if sandbox else None
        name = f"memgrid-arm-{arm_dir.name}"
        checks.append(image_check(f"image arm {arm_dir.name}", ref, ref.tag if ref else name,
                                  DEFAULT_GRID if name in default else f"grids with arm {arm_dir.name}"))
    if sandbox is not None:
        from runner.agents.registry import cli_agents

        for agent in cli_agents():
            pin = agent.load_pin()
            tag = agent.image_tag(sandbox, pin)
            checks.append(image_check(f"image {agent.name}", find_image(client, tag), tag, f"grids with agent {agent.name}",
                                      f" (CLI {pin.version})", "; fetches the pinned CLI from the npm registry"))
    for name, path, free_gb in free_space(client, runs_dir):
        checks.append(Check(name, free_gb >= MIN_FREE_GB, f"{free_gb:.1f} GiB free at {path}",
                            "" if free_gb >= MIN_FREE_GB else f"free at least {MIN_FREE_GB} GiB ({WHY_FREE})", EVERY_GRID))
    try:
        leftovers = client.containers.list(all=True, ignore_removed=True, filters={"label": RUN_LABEL})
    except docker.errors.APIError:
        leftovers = []
    runs = sorted({c.labels.get(RUN_LABEL) for c in leftovers})
    # Another run's containers stop no grid (each run removes only its own), but they hold memory and disk.
    checks.append(Check("leftover containers", not leftovers,
                        f"{len(leftovers)} from runs {', '.join(runs)}" if leftovers else "none",
                        "; ".join(f"docker rm -f $(docker ps -aq --filter label={RUN_LABEL}={r})" for r in runs),
                        "no grid (they hold memory and disk)", blocking=False, unmet="present"))
    return checks


def default_grid_runs(checks: list[Check]) -> bool:
    """Whether nothing stops the default grid: every check it needs passes, or is an image its run builds."""
    return all(c.ok or not c.blocking for c in checks if c.needed_by in (DEFAULT_GRID, EVERY_GRID))


def node_checks(images: dict[str, str]) -> list[Check]:
    """What a node that runs cells needs, checked on that node (every dask worker runs this): its engine
    answers, and each image a cell needs is there under its tag with the controller's image id (the id is
    the sha256 of the image's config, so an equal id is the same image)."""
    try:
        client = connect(timeout=15)
    except EngineError as e:
        return [Check("engine", False, str(e).split(": fix:")[0], "set DOCKER_HOST of the worker to an engine that answers")]
    version = client.version()
    checks = [Check("engine", True, f"Docker {version.get('Version')} (API {version.get('ApiVersion')})")]
    for tag, image_id in sorted(images.items()):
        found = find_image(client, tag)
        detail = "missing" if found is None else "present" if found.id == image_id else f"has id {found.id[:19]}, not {image_id[:19]}"
        checks.append(Check(f"image {tag}", found is not None and found.id == image_id, detail, "load it from the controller's engine"))
    return checks
