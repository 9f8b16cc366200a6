"""Peak controller RSS while a cell's agent leaves a huge file in its workspace and floods its output.

Each measurement runs in its own child process (ru_maxrss is a process's peak), side by side:
- `export`: a sandbox whose workspace holds one FILE_MB file (plus a small regular file), exported
  with Sandbox.export under the default 64 MiB artifact cap (what a cell does now), against reading
  the whole archive into memory (what the controller did before the cap: b"".join(get_archive));
- `flood`: the agent prints FLOOD_MB on stdout, captured by Sandbox.exec (head and tail kept, the
  rest counted), against keeping every byte (the capture unbounded);
- `store`: the session leaves a STORE_MB file in /sandbox/store, read by trial.store_snapshot (a stream that
  stops at the store cap, 1024 MiB; --quick: 10 MiB under a 20 MB store), against reading the whole archive,
  its files and their pack into memory (what store_snapshot did before the cap).
Each child prints its peak RSS above its own baseline (after imports and the sandbox start) and the
wall time; the figures are the bounded peaks and their ratio to the unbounded ones.

    .venv/bin/python benchmarks/sandbox_bounds.py [--file-mb 1500] [--flood-mb 500] [--store-mb 1500] [--quick]
"""

import argparse
import json
import resource
import subprocess
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))
QUICK = {"file_mb": 150, "flood_mb": 50, "store_mb": 20, "store_cap_mib": 10}


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(mode: str, bounded: bool, megabytes: int, store_cap_mib: int | None) -> dict:
    """One measurement: a real sandbox, the agent's doing, the controller's reading of it."""
    from _engine import cleanup
    from runner.env.bundle import build_bundle
    from runner.env.engine import connect
    from runner.env.images import ensure_images
    from runner.arms.kinds import STORE_DIR
    from runner.env.archive import pack, safe_entries
    from runner.env.sandbox import MIB, BoundedCapture, DiskBudget, Sandbox
    from runner.exec import trial
    from runner.plan.spec import DEFAULT_ARTIFACT_MIB, load_all_arms, load_all_tasks

    client = connect()
    images = ensure_images(client, log=lambda m: None)
    run_id = f"bench-bounds-{uuid.uuid4().hex[:8]}"
    bundle = build_bundle(load_all_tasks(REPO)["slug_ids"], load_all_arms(REPO)["bare"], {})
    disk = DiskBudget(max(2048, megabytes + 600))  # the file must fit the budget: this measures the export
    try:
        with Sandbox(client, images.sandbox.tag, run_id, "bounds", bundle_tar=bundle.tar, lifetime=900, disk=disk) as box:
            if mode == "export":
                box.exec(["sh", "-c", f"head -c {megabytes * MIB} /dev/zero > big.bin"], timeout=600)
            if mode == "store":
                box.exec(["sh", "-c", f"mkdir -p {STORE_DIR} && head -c {megabytes * MIB} /dev/zero > {STORE_DIR}/big.bin"],
                         timeout=600)
                if store_cap_mib:
                    trial.STORE_CAP_BYTES = store_cap_mib * MIB
            base = peak_mib()
            started = time.monotonic()
            if mode == "export" and bounded:
                export = box.export("/sandbox/workspace", DEFAULT_ARTIFACT_MIB * MIB)
                seen = f"too_large={export.too_large} at {export.over_cap_path}"
            elif mode == "export":
                stream, _ = box.container.get_archive("/sandbox/workspace")
                seen = f"{len(b''.join(stream)) // MIB} MiB archive held"
            elif mode == "store" and bounded:
                snapshot = trial.store_snapshot(box)
                seen = f"too_large={snapshot.too_large} under a {trial.STORE_CAP_BYTES // MIB} MiB cap"
            elif mode == "store":
                stream, _ = box.container.get_archive(STORE_DIR, chunk_size=MIB)
                entries = safe_entries(b"".join(stream), strip="store")
                seen = f"{len(pack(entries)) // MIB} MiB store packed"
            else:
                command = ["sh", "-c", f"head -c {megabytes * MIB} /dev/zero | tr '\\0' y | fold -w 1023"]
                if not bounded:  # keep every byte, as the capture did before it was bounded
                    BoundedCapture.__init__.__defaults__ = (1 << 40, 1 << 40)
                result = box.exec(command, timeout=600)
                seen = f"kept {len(result.stdout) // MIB} MiB of {result.stdout_bytes // MIB} MiB"
            seconds = time.monotonic() - started
            grown = peak_mib() - base
    finally:
        cleanup(client, run_id)
    return {"mode": mode, "bounded": bounded, "megabytes": megabytes, "peak_growth_mib": round(grown, 1),
            "seconds": round(seconds, 2), "seen": seen}


def measure(mode: str, bounded: bool, megabytes: int, store_cap_mib: int | None = None) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", mode, "--bounded", str(int(bounded)),
                          "--megabytes", str(megabytes), "--store-cap-mib", str(store_cap_mib or 0)],
                         capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"child {mode} bounded={bounded} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file-mb", type=int, default=1500)
    parser.add_argument("--flood-mb", type=int, default=500)
    parser.add_argument("--store-mb", type=int, default=1500)
    parser.add_argument("--store-cap-mib", type=int, default=0, help=argparse.SUPPRESS)  # a child's: 0 the default cap
    parser.add_argument("--quick", action="store_true", help=f"small sizes {QUICK}, to check the benchmark runs")
    parser.add_argument("--child")
    parser.add_argument("--bounded", type=int, default=1)
    parser.add_argument("--megabytes", type=int, default=0)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, bool(args.bounded), args.megabytes, args.store_cap_mib)))
        return
    file_mb, flood_mb, store_mb = ((QUICK["file_mb"], QUICK["flood_mb"], QUICK["store_mb"]) if args.quick
                                   else (args.file_mb, args.flood_mb, args.store_mb))
    rows = {}
    for mode, mb in (("export", file_mb), ("flood", flood_mb), ("store", store_mb)):
        for bounded in (True, False):
            r = measure(mode, bounded, mb, QUICK["store_cap_mib"] if args.quick else None)
            rows[(mode, bounded)] = r
            print(f"{mode:6} {mb:5} MB {'bounded  ' if bounded else 'unbounded'} peak +{r['peak_growth_mib']:7.1f} MiB "
                  f"in {r['seconds']:6.2f} s ({r['seen']})")
    for mode, mb, what in (("export", file_mb, "MB workspace file"), ("flood", flood_mb, "MB output flood"),
                           ("store", store_mb, "MB store left by a session")):
        b, u = rows[(mode, True)], rows[(mode, False)]
        ratio = f" ({u['peak_growth_mib'] / b['peak_growth_mib']:.0f}x)" if b["peak_growth_mib"] >= 1 else ""
        print(f"figure: controller peak RSS growth with a {mb} {what}: {b['peak_growth_mib']:.0f} MiB bounded, "
              f"{u['peak_growth_mib']:.0f} MiB unbounded{ratio}")


if __name__ == "__main__":
    main()
