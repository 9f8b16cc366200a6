"""Oracle checker for money_rounding: python3 check.py /artifact

Calls the artifact's invoice_total on oracle invoices (in a child process, with a timeout, as the
artifact's user through memgrid_check: it is handed the invoices, never the expected amounts) and
compares each amount due with the expected one here, to the cent, as the prompt's type: a Decimal with
exactly two decimal places (a float or str of the right amount is not one).
"""
import sys

sys.dont_write_bytecode = True

import json
import os
from decimal import Decimal

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import as_decimal, run_invoices  # noqa: E402


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = os.path.abspath(sys.argv[1])
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as fh:
        cases = json.load(fh)
    report = run_invoices(artifact, [case["lines"] for case in cases])
    if "error" in report or report.get("import_error"):
        reason = report.get("error") or f"cannot import invoicing.invoice_total: {report['import_error']}"
        print(f"FAIL: {reason}")
        print(f"SUMMARY: 0/{len(cases)} cases passed")
        return 1
    passed = 0
    for i, (case, res) in enumerate(zip(cases, report["results"]), 1):
        expected = Decimal(case["expected"])
        if "error" in res:
            print(f"FAIL case {i} ({case['name']}): invoice_total {res['error']}")
            continue
        got = as_decimal(res["value"])
        # the prompt's type: a Decimal with exactly two decimal places (a float, str or int equal to it is not)
        if got is not None and got == expected and res["type"] == "Decimal" and got.as_tuple().exponent == -2:
            passed += 1
        else:
            print(f"FAIL case {i} ({case['name']}): invoice_total returned {res['value']!r} "
                  f"({res['type']}), expected {case['expected']}")
    print(f"SUMMARY: {passed}/{len(cases)} cases passed")
    return 0 if passed == len(cases) else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL: checker error: {type(exc).__name__}: {exc}")
        code = 1
    sys.exit(code)
