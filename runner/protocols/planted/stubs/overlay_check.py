"""A hosted task's own check, as its runner runs it (SMRITI's apply_hidden_checks then run_check): the workspace the
agent left with the task's hidden/ laid over it, then its check command there; exit 0 passes.

memgrid runs this file as the judge in the checker container (it reads /oracle: hidden/ at /oracle/hidden and the
command in /oracle/check_cmd.txt); the command and the artifact's code run as the artifact user in its own home,
through memgrid_check.run_artifact, bounded by the seconds given. Not isolated: the artifact's code runs in the
same process tree as hidden/'s tests, so the grid accepts each such task by name (unisolated_checkers).
Usage: python3 overlay_check.py SECONDS
"""

import os
import sys

from memgrid_check import run_artifact


def tree(root: str) -> dict[str, bytes]:
    files = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                files[os.path.relpath(path, root)] = f.read()
    return files


def main() -> int:
    seconds = float(sys.argv[1])
    with open("/oracle/check_cmd.txt", encoding="utf-8") as f:
        command = f.read()
    files = {**tree("/artifact"), **tree("/oracle/hidden")}  # hidden/ over the workspace, file by file
    run = run_artifact(["sh", "-c", command], files=files, timeout=seconds)
    sys.stdout.write(run.stdout.decode(errors="replace")[-4000:])
    sys.stdout.write(run.stderr.decode(errors="replace")[-4000:])
    passed = run.exit == 0 and not run.timed_out
    print(f"SUMMARY check_cmd {'timed out' if run.timed_out else f'exited {run.exit}'}: {'pass' if passed else 'FAIL'}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
