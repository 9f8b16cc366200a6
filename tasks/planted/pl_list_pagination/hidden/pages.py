"""Harness run by check.py through memgrid_check.run_python, as the artifact's user:
    python3 -I -B -c <this source> ARTIFACT TOTAL PER_PAGE

Does in the artifact's process what a client does with the page numbers: list(page_numbers(TOTAL, PER_PAGE)),
and prints one JSON line on its own copy of stdout (the artifact's prints go to stderr):
    {"pages": [...] or null, "repr": "..."}   (pages: null when an item is not a plain number)
    or {"error": "<exception class>", "message": "..."}
It is handed the inputs alone; the judge compares the pages with the expected ones.
"""
import json
import os
import signal
import sys

report = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)


def emit(record):
    report.write(json.dumps(record) + "\n")
    report.flush()


def on_alarm(*_):
    raise TimeoutError("no answer within 5s")


try:
    artifact, total, per_page = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(5)
    try:
        sys.path.insert(0, artifact)
        from api.pagination import page_numbers
        pages = list(page_numbers(total, per_page))
        plain = all(type(p) in (int, float, bool) for p in pages)
        shown = repr(pages)[:300]
    finally:
        signal.alarm(0)
    emit({"pages": pages if plain else None, "repr": shown})
except BaseException as exc:
    try:
        message = str(exc)[:300]
    except BaseException:
        message = "<unprintable>"
    emit({"error": type(exc).__name__, "message": message})
os._exit(0)
