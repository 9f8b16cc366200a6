"""Child process used by check.py and detect.py: runs the artifact's sort_tickets.

Run by memgrid_check.run_python(..., [ARTIFACT], stdin=<JSON list of ticket lists>), as the
artifact's user: it is handed the tickets alone, never the expected orders.

Prints JSON lines on stdout and nothing else; the artifact's own output goes to stderr:
  {"import_error": "..."}              (and nothing more), or, per ticket list, in order, one of
    {"ids": [...]}                     the ids of the returned tickets, in the returned order
    {"error": "..."}                   sort_tickets raised
  {"done": n}                          n = number of result lines printed
"""
import sys

sys.dont_write_bytecode = True

import copy
import json
import os


def _ids(result) -> list:
    ids = []
    for t in result:
        ident = t.get("id") if isinstance(t, dict) else repr(t)[:60]
        ids.append(ident if type(ident) in (int, str) else repr(ident)[:60])
    return ids


def main() -> None:
    artifact = sys.argv[1]
    ticket_sets = json.loads(sys.stdin.read())
    # The report gets its own copy of stdout; fd 1 (and so print) now goes to stderr.
    report = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)

    def emit(record: dict) -> None:
        report.write(json.dumps(record) + "\n")
        report.flush()

    sys.path.insert(0, artifact)
    try:
        from tickets import sort_tickets
    except BaseException as exc:  # ImportError, SyntaxError, SystemExit, ...
        emit({"import_error": f"{type(exc).__name__}: {exc}"[:300]})
        return
    done = 0
    for tickets in ticket_sets:
        try:
            result = sort_tickets(copy.deepcopy(tickets))
            record = {"ids": _ids(list(result))}
        except BaseException as exc:
            record = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        emit(record)
        done += 1
    emit({"done": done})


if __name__ == "__main__":
    try:
        main()
    except BaseException:
        pass
    os._exit(0)  # no atexit hooks or lingering threads of the artifact after the report
