"""The claude-code agent against the scripted model: wall time of a cell split into its phases,
admission per arm, and the agent image's build time and size.

Runs a small grid (arms bare and recall, condition present, all tasks, the real CLI, the scripted
model) through the same path as `memgrid grid`, into a temp runs dir under its own run id, then
prints medians of: sidecars start (network + gateway + scripted model), sandbox container start,
CLI start to its init event, MCP connect (the init delay of recall cells beyond bare cells: the CLI
connects its MCP servers before init) and the session (init to result). With --image it also
rebuilds the claude-code layer over the sandbox image without the build cache, both with the binary sent in
its build context (as layers were built before) and copied from the agent's own image (as now), and reports
each one's time and size and their ratio (the layers are removed afterwards).

    .venv/bin/python benchmarks/claude_code.py [--arms bare,recall] [--image] [--run RUN_DIR] [--quick]

--quick runs one cell: the first task, arm bare (no corpus, no store ingest); --arms still overrides it.
"""

import argparse
import json
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from runner.agents.claude_code import CONTEXT, ClaudeCodeAgent, fetch_binary, load_pin
from runner.env.engine import connect
from runner.env.images import AGENT_LAYER, _context_tar, context_files, ensure_images
from runner.results.ledger import latest_attempts
from runner.plan.spec import grid_from_dict, load_all_tasks

from _engine import run_and_summarise

REPO = Path(__file__).resolve().parent.parent


def median(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 2) if values else None


def summarise(run_dir: Path) -> None:
    rows = list(latest_attempts([json.loads(l) for l in (run_dir / "ledger.jsonl").open()]).values())
    rows = [r for r in rows if r["agent"] == "claude-code"]
    by_arm: dict[str, list[dict]] = {}
    for r in rows:
        by_arm.setdefault(r["arm"], []).append(r)
    print(f"{len(rows)} claude-code cells in {run_dir.name}")
    print(f"{'arm':16} {'admitted':>9} {'wall':>6} {'sidecars':>9} {'container':>10} {'cli->init':>10} {'session':>8}")
    inits = {}
    for arm, cells in sorted(by_arm.items()):
        t = [json.loads(r["timings"]) if r["timings"] else {} for r in cells]
        inits[arm] = median([x.get("cli_to_init") for x in t])
        admitted = sum(r["admitted"] for r in cells)
        print(f"{arm:16} {admitted:4}/{len(cells):<4} {median([r['wall_seconds'] for r in cells]):6} "
              f"{median([x.get('sidecars_start') for x in t]):9} {median([x.get('container_start') for x in t]):10} "
              f"{inits[arm]:10} {median([x.get('session') for x in t]):8}")
    mcp = [a for a in inits if a.startswith("recall") and a != "recall_prefetch"]
    if "bare" in inits and mcp:
        print(f"MCP connect (recall cli->init minus bare): {round(inits[mcp[0]] - inits['bare'], 2)} s")
    print(f"figure: median claude-code cell wall time: {median([r['wall_seconds'] for r in rows])} s; "
          f"admitted {sum(r['admitted'] for r in rows)}/{len(rows)}")


def image_build(client, base_tag: str) -> None:
    """The claude-code layer over the sandbox image built both ways without cache, side by side: the binary sent
    in the layer's own build context (how every layer was built before the agent had an image of its own) and
    copied from the agent's own image (images/agent-layer, how they are built now)."""
    pin = load_pin()
    fetch_binary(pin, log=print)
    cli = ClaudeCodeAgent.ensure_cli_image(client, pin, log=print)
    base = client.images.get(base_tag)

    def timed(context: Path, buildargs: dict) -> float:
        tag = f"memgrid-bench-claude-code:{uuid.uuid4().hex[:8]}"
        started = time.monotonic()
        with _context_tar(context, context_files(context)) as archive:
            image, _ = client.images.build(fileobj=archive, custom_context=True, tag=tag, buildargs=buildargs,
                                           rm=True, forcerm=True, nocache=True)
        seconds = time.monotonic() - started
        print(f"  {context.name}: built in {seconds:.1f} s without cache; image {image.attrs['Size'] / 2**20:.0f} MiB "
              f"(layer {(image.attrs['Size'] - base.attrs['Size']) / 2**20:.0f} MiB)")
        client.images.remove(image.id, force=True)
        return seconds

    print(f"claude-code layer over {base_tag}:")
    with tempfile.TemporaryDirectory(prefix="memgrid-bench-layer-") as tmp:
        sent = Path(tmp) / "binary-in-context"
        sent.mkdir()
        (sent / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\nCOPY claude /usr/local/bin/claude\n")
        shutil.copyfile(CONTEXT / "claude", sent / "claude")
        (sent / "claude").chmod(0o755)
        before = timed(sent, {"BASE": base_tag})
    after = timed(AGENT_LAYER, {"BASE": base_tag, "CLI": cli})
    print(f"  copied from the agent's image / sent in the context: {after / before:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arms", help="comma-separated arms (default bare,recall; bare with --quick)")
    parser.add_argument("--image", action="store_true", help="also time an uncached build of the agent layer")
    parser.add_argument("--run", type=Path, help="summarise this existing run folder instead of running cells")
    parser.add_argument("--quick", action="store_true", help="one cell: the first task, arm bare")
    args = parser.parse_args()
    args.arms = args.arms or ("bare" if args.quick else "bare,recall")
    if args.run:
        summarise(args.run)
        return
    client = connect()
    if args.image:
        image_build(client, ensure_images(client, log=lambda m: None).sandbox.tag)
    tasks = sorted(load_all_tasks(REPO))[:1] if args.quick else "all"
    grid = grid_from_dict({"name": "bench-cc", "tasks": tasks, "arms": args.arms.split(","), "agents": ["claude-code"],
                           "seeds": 1, "conditions": ["present"], "model": "scripted"}, Path("(benchmark)"))
    run_and_summarise(client, grid, f"bench-cc-{uuid.uuid4().hex[:8]}", REPO, summarise)


if __name__ == "__main__":
    main()
