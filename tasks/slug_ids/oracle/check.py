"""Oracle checker for slug_ids: python3 check.py /artifact"""
import sys

sys.dont_write_bytecode = True

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = os.path.abspath(sys.argv[1])
    with open(os.path.join(HERE, "cases.json"), encoding="utf-8") as fh:
        cases = json.load(fh)

    sys.path.insert(0, artifact)
    try:
        from records import make_id
    except BaseException as exc:  # ImportError, SyntaxError, SystemExit, ...
        print(f"FAIL: cannot import records.make_id: {type(exc).__name__}: {exc}")
        print(f"SUMMARY: 0/{len(cases)} cases passed")
        return 1

    passed = 0
    for i, case in enumerate(cases, 1):
        try:
            got = make_id(case["name"])
        except BaseException as exc:
            print(f"FAIL case {i}: make_id({case['name']!r}) raised {type(exc).__name__}: {exc}")
            continue
        if got == case["id"]:
            passed += 1
        else:
            print(f"FAIL case {i}: make_id({case['name']!r}) returned {got!r}, "
                  f"expected {case['id']!r}")

    print(f"SUMMARY: {passed}/{len(cases)} cases passed")
    return 0 if passed == len(cases) else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL: checker error: {type(exc).__name__}: {exc}")
        code = 1
    sys.exit(code)
