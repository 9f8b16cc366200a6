"""Judge for pl_list_pagination: python3 check.py /artifact

Runs the artifact's api.pagination as the artifact's user through memgrid_check, handing it inputs
alone: list(page_numbers(25, 10)) in the artifact's process (pages.py), and paginate() of 25 items
on pages 0, 2 and 3 (memgrid_check.call). The pages and items are compared here with the expected
ones (page numbers are zero-based), as the old hidden test compared them: the page numbers as a list,
each page a list (a tuple is not equal to a list).
"""
import sys

sys.dont_write_bytecode = True

import json
import os

from memgrid_check import call, run_python

HERE = os.path.dirname(os.path.abspath(__file__))
ITEMS = list(range(25))
PAGES = ((25, 10), [0, 1, 2])
# (page, per_page, expected items)
SLICES = [(0, 10, list(range(10))), (2, 10, list(range(20, 25))), (3, 10, [])]


def shown(obs) -> str:
    if obs is None:
        return "gave no result"
    if obs.returned:
        return f"returned {str(obs.repr)[:200]}"
    return f"raised {obs.error}: {str(obs.message)[:200]}"


def page_list(artifact: str, total: int, per_page: int):
    """(list of page numbers or None, what the run gave, for a FAIL line)"""
    run = run_python(os.path.join(HERE, "pages.py"), [artifact, str(total), str(per_page)], timeout=20)
    if run.timed_out:
        return None, "the artifact run was killed at the timeout"
    lines = run.stdout.decode(errors="replace").splitlines()
    try:
        rec = json.loads(lines[0]) if len(lines) == 1 else None
    except ValueError:
        rec = None
    if isinstance(rec, dict) and set(rec) == {"pages", "repr"}:
        pages = rec["pages"]
        if isinstance(pages, list) and all(type(p) in (int, float, bool) for p in pages):
            return pages, f"gave {str(rec['repr'])[:200]}"
        return None, f"gave {str(rec['repr'])[:200]}"
    if isinstance(rec, dict) and set(rec) == {"error", "message"}:
        return None, f"raised {str(rec['error'])[:100]}: {str(rec['message'])[:200]}"
    return None, f"the artifact run exited {run.exit} without a well-formed report ({run.tail(200)})"


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = sys.argv[1]
    passed = total = 0

    (n, per_page), expected = PAGES
    total += 1
    pages, got = page_list(artifact, n, per_page)
    if pages is not None and pages == expected:
        passed += 1
    else:
        print(f"FAIL list(page_numbers({n}, {per_page})): {got}, expected {expected}")

    seen, problem = call(artifact, [{"module": "api.pagination", "function": "paginate", "args": [ITEMS, page, size]}
                                    for page, size, _ in SLICES], timeout=20, per_call=5)
    for (page, size, expected), obs in zip(SLICES, seen):
        total += 1
        if obs is not None and obs.returned and obs.type == "list" and isinstance(obs.value, list) \
                and obs.value == expected:
            passed += 1
        else:
            print(f"FAIL paginate(list(range(25)), {page}, {size}): {shown(obs)}, expected {expected}")
    if problem is not None:
        print(f"FAIL the artifact run: {problem}")
    print(f"SUMMARY: {passed}/{total} checks passed")
    return 0 if passed == total and problem is None else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL: checker error: {type(exc).__name__}: {exc}")
        code = 1
    sys.exit(code)
