"""Grading time per cell: the isolated grader (judge and artifact as two users) against the grader of an
earlier commit, side by side in one run.

    .venv/bin/python benchmarks/grading_time.py [--before 875c4ad] [--repeat 3] [--quick]

For each coding task, its naive and informed references are graded by both graders, alternately, in
pre-started checker containers (as a coding cell grades: the container starts beside the session, so
a cell's checker_seconds is inputs in, memgrid-grade, grade out). The earlier grader is rebuilt from
that commit's images/checker and each task's oracle/ at that commit (git show), over the same base
image, and graded the way that commit did (the exec's last JSON line). Prints the median seconds per
grade of each and their ratio.
"""

import argparse
import io
import json
import statistics
import subprocess
import tarfile
import time
import uuid
from pathlib import Path

from runner.env.archive import Entry, pack
from runner.env.bundle import tree_entries
from runner.env.engine import connect
from runner.env.images import ensure_images
from runner.env.containers import RUN_LABEL, hardened, remove_quietly
from runner.env.sandbox import exec_in
from runner.grading.checker import CheckerContainer, checker_bound, checker_inputs, checker_spec
from runner.plan.spec import load_all_tasks

from _engine import cleanup, foreign_containers, spread

ROOT = Path(__file__).resolve().parent.parent


def git_show(ref: str, path: str) -> bytes:
    return subprocess.run(["git", "show", f"{ref}:{path}"], cwd=ROOT, check=True, capture_output=True).stdout


def git_tree(ref: str, folder: str) -> dict[str, bytes]:
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", ref, folder], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    return {name.removeprefix(folder).lstrip("/"): git_show(ref, name) for name in names}


def build_before_image(client, ref: str, base_tag: str) -> str:
    files = git_tree(ref, "images/checker")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    tag = f"memgrid-checker-before:{ref[:12]}"
    client.images.build(fileobj=io.BytesIO(buf.getvalue()), custom_context=True, tag=tag,
                        buildargs={"BASE": base_tag}, rm=True, network_mode="none")
    return tag


def before_inputs(oracle: dict[str, bytes], artifact: list[Entry]) -> bytes:
    """As that commit packed them: everything root-owned and world-readable."""
    entries = [Entry(f"artifact/{e.path}", e.data, 0o555 if e.mode & 0o111 else 0o444) for e in artifact]
    entries += [Entry(f"oracle/{p}", d, 0o444) for p, d in oracle.items()]
    return pack(entries, uid=0, gid=0, dir_mode=0o555)


def grade_before(client, tag: str, task, inputs: bytes, run_id: str) -> float:
    args = hardened(tag, user="checker", network="none", labels={RUN_LABEL: run_id}, limits=__import__(
        "runner.env.sandbox", fromlist=["Limits"]).Limits(), command=["sleep", "300"], working_dir="/tmp",
        environment={"PYTHONDONTWRITEBYTECODE": "1", "MEMGRID_GRADE": json.dumps(checker_spec(task))})
    container = client.containers.create(**args)
    try:
        container.start()
        t0 = time.monotonic()
        container.put_archive("/", inputs)
        result = exec_in(client, container.id, ["memgrid-grade"], timeout=checker_bound(task), workdir="/tmp")
        json.loads(result.stdout.strip().splitlines()[-1])  # that commit's grade: the last line
        return time.monotonic() - t0
    finally:
        remove_quietly(container)


def grade_after(client, tag: str, task, inputs: bytes, run_id: str) -> float:
    container = CheckerContainer(client, tag, checker_spec(task), run_id=run_id, cell_id="bench", lifetime=300)
    try:
        container.start()
        grade, log, seconds = container.grade(inputs, checker_bound(task))
        if grade is None:
            raise SystemExit(f"{task.id}: the grader gave no grade: {log[-300:]}")
        return seconds
    finally:
        container.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="875c4ad", help="the commit whose grader is the baseline")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one task, one repetition")
    args = parser.parse_args()
    client = connect()
    images = ensure_images(client, log=print)
    run_id = f"bench-grading-{uuid.uuid4().hex[:8]}"
    print(f"other memgrid containers on the engine: {foreign_containers(client, run_id)}")
    before_tag = build_before_image(client, args.before, images.base.tag)
    tasks = [t for t in load_all_tasks(ROOT).values()][:1 if args.quick else None]
    before, after = [], []
    try:
        for _ in range(1 if args.quick else args.repeat):
            for task in tasks:
                oracle = git_tree(args.before, f"tasks/{task.id}/oracle")
                fixture = {e.path.removeprefix("w/"): e for e in tree_entries(task.fixture, "w")}
                for ref in ("naive", "informed"):
                    overlay = {e.path.removeprefix("w/"): e for e in tree_entries(task.reference(ref), "w")}
                    artifact = [Entry(p, e.data, e.mode) for p, e in {**fixture, **overlay}.items()]
                    before.append(grade_before(client, before_tag, task, before_inputs(oracle, artifact), run_id))
                    after.append(grade_after(client, images.checker.tag, task, checker_inputs(task, artifact), run_id))
    finally:
        cleanup(client, run_id)
    ratio = statistics.median(after) / statistics.median(before)
    print(f"grades: {len(after)} each ({len(tasks)} tasks x naive, informed)")
    print(f"before ({args.before}): median {spread(before, 3)} s per grade")
    print(f"after (isolated):   median {spread(after, 3)} s per grade")
    print(f"figure: grading time per cell after / before = {ratio:.2f} (target <= 1.1)")


if __name__ == "__main__":
    main()
