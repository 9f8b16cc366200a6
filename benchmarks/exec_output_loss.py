"""How often the engine returns a short exec with no output at all, and what memgrid's second read leaves of it.

Issue 74: under load a bundle verifier ran to its end (exit 0 in 0.3 s) and the controller got neither stdout nor
stderr (moby/moby#27289, docker/docker-py#2042). This runs what a Memora submission's answer containers do, many at
once: RUNS sandboxes of the sandbox image, AT_ONCE at a time, each holding a small request bundle, each running the
bundle verifier once as exec_in runs it (every run's output counted, the raw loss rate) and once through
sandbox.probe (read again when empty, what bundle_verification does); BURNERS processes spin on the other cores as
the controller's judges do. Prints the runs that came back empty, raw and after the probe, and the verifier's
seconds (median, 99th percentile, max) beside VERIFY_SECONDS, the wait it is given.

    .venv/bin/python benchmarks/exec_output_loss.py [--runs 800] [--at-once 8] [--burners 2] [--quick]
"""

import argparse
import json
import multiprocessing
import statistics
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def burn(stop) -> None:
    while not stop.is_set():
        sum(i * i for i in range(10_000))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=800)
    parser.add_argument("--at-once", type=int, default=8)
    parser.add_argument("--burners", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="8 runs, 4 at once, 1 burner")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.at_once, args.burners = 8, 4, 1

    from _engine import cleanup
    from runner.env.archive import Entry
    from runner.env.bundle import bundle_of
    from runner.env.engine import connect
    from runner.env.images import ensure_images
    from runner.env.sandbox import Sandbox, probe
    from runner.exec.trial import VERIFY_SECONDS

    client = connect(concurrency=args.at_once)
    image = ensure_images(client, log=lambda m: None).sandbox.tag
    run_id = f"bench-execloss-{uuid.uuid4().hex[:8]}"

    def one(i: int) -> tuple[bool, bool, float]:
        request = {"query_id": f"q{i}", "records": [{"record_id": f"r{j}", "text": "x" * 300} for j in range(40)]}
        bundle = bundle_of([Entry("request.json", json.dumps(request).encode())])
        with Sandbox(client, image, run_id, f"execloss-{i}", bundle_tar=bundle.tar, lifetime=300) as box:
            raw = box.verification_report(timeout=VERIFY_SECONDS)
            read, _ = probe(lambda: box.verification_report(timeout=VERIFY_SECONDS))
        return not raw.stdout.strip(), not read.stdout.strip(), raw.seconds

    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=burn, args=(stop,)) for _ in range(args.burners)]
    for p in burners:
        p.start()
    started = time.monotonic()
    try:
        with ThreadPoolExecutor(args.at_once) as pool:
            results = list(pool.map(one, range(args.runs)))
    finally:
        stop.set()
        for p in burners:
            p.join()
        cleanup(client, run_id)
    raw_lost, still_lost = sum(r[0] for r in results), sum(r[1] for r in results)
    seconds = sorted(r[2] for r in results)
    p99 = seconds[min(len(seconds) - 1, int(0.99 * len(seconds)))]
    print(f"{args.runs} verifier runs, {args.at_once} sandboxes at once, {args.burners} burners, "
          f"{time.monotonic() - started:.0f} s")
    print(f"verifier seconds: median {statistics.median(seconds):.2f}, p99 {p99:.2f}, max {seconds[-1]:.2f} "
          f"(VERIFY_SECONDS {VERIFY_SECONDS}: {VERIFY_SECONDS / seconds[-1]:.0f}x the max)")
    print(f"figure: {raw_lost} of {args.runs} runs came back with no output as the engine returned them; "
          f"{still_lost} after sandbox.probe's reads")
    return 1 if still_lost else 0


if __name__ == "__main__":
    sys.exit(main())
