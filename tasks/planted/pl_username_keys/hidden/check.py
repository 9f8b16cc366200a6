"""Judge of pl_username_keys: python3 check.py /artifact

Calls accounts.names.same_user in the artifact through memgrid_check.call (as the artifact's user, on the
old hidden test's pairs of names alone) and asserts here, as the old test did, that each pair is the same
user: full-width letters, the 'fi' ligature and 'ß' against 'SS' (NFKC, then casefold()). The answer must
be truthy, as `assert same_user(a, b)` required (a value the observer cannot copy, e.g. an object, fails).
Prints one `FAIL <what>: <why>` line per failed check, then `SUMMARY: <passed>/<total> checks passed`.
"""
import sys

sys.dont_write_bytecode = True

import os

from memgrid_check import call

CASES = [  # (old test, a, b): same_user(a, b) must be truthy
    ("test_full_width_letters_are_the_same_user", "\uff4a\uff4f\uff48\uff4e", "john"),
    ("test_compatibility_characters_are_folded", "\ufb01sh", "fish"),
    ("test_case_is_folded_not_just_lowered", "Stra\u00dfe", "STRASSE"),
]


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = os.path.abspath(sys.argv[1])
    seen, problem = call(artifact, [{"module": "accounts.names", "function": "same_user", "args": [a, b]}
                                    for _, a, b in CASES], timeout=30, per_call=5)
    passed = 0
    for (name, a, b), obs in zip(CASES, seen):
        what = f"same_user({a!r}, {b!r})"
        if obs is None:
            why = f"{what} gave no result: {problem}"
        elif not obs.returned:
            why = f"{what} raised {obs.error}: {obs.message}"
        elif obs.value is None and obs.type != "NoneType":
            why = f"{what} returned a {obs.type} ({str(obs.repr)[:100]}), not a plain value"
        elif not obs.value:
            why = f"{what} returned {str(obs.repr)[:100]}, expected a true value (the same user)"
        else:
            passed += 1
            continue
        print(f"FAIL {name}: {why}")
    if problem is not None:
        print(f"FAIL run: {problem}")
    print(f"SUMMARY: {passed}/{len(CASES)} checks passed")
    return 0 if passed == len(CASES) and problem is None else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL checker: checker error: {type(exc).__name__}: {exc}")
        print(f"SUMMARY: 0/{len(CASES)} checks passed")
        code = 1
    sys.exit(code)
