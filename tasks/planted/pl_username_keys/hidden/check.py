"""Judge of pl_username_keys: python3 check.py /artifact

Calls accounts.names in the artifact through memgrid_check.call (as the artifact's user, on names alone) and
judges here: the old hidden test's pairs (full-width letters, the 'fi' ligature and 'ß' against 'SS') must be
the same user, each name's key must be NFKC then casefold() of it, and names that differ after that
normalisation must stay different users. The old test asserted only the first, which a `same_user` that
always answers True passed without normalising anything. The answers must be plain values (an object the
observer cannot copy fails).
Prints one `FAIL <what>: <why>` line per failed check, then `SUMMARY: <passed>/<total> checks passed`.
"""
import sys

sys.dont_write_bytecode = True

import os

from memgrid_check import call

# (check, function, args, expected): expected True/False is a truth test, a string an exact key
CASES = [
    ("test_full_width_letters_are_the_same_user", "same_user", ["\uff4a\uff4f\uff48\uff4e", "john"], True),
    ("test_compatibility_characters_are_folded", "same_user", ["\ufb01sh", "fish"], True),
    ("test_case_is_folded_not_just_lowered", "same_user", ["Stra\u00dfe", "STRASSE"], True),
    ("key_of_full_width_letters", "normalize_username", [" \uff2a\uff4f\uff48\uff4e "], "john"),
    ("key_of_a_ligature", "normalize_username", ["\ufb01sh"], "fish"),
    ("key_of_sharp_s", "normalize_username", ["Stra\u00dfe"], "strasse"),
    ("different_names_stay_different", "same_user", ["\uff4a\uff4f\uff48\uff4e", "joan"], False),
    ("different_folded_names_stay_different", "same_user", ["Stra\u00dfe", "strase"], False),
]


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = os.path.abspath(sys.argv[1])
    seen, problem = call(artifact, [{"module": "accounts.names", "function": f, "args": args}
                                    for _, f, args, _ in CASES], timeout=30, per_call=5)
    passed = 0
    for (name, f, args, expected), obs in zip(CASES, seen):
        what = f"{f}({', '.join(map(repr, args))})"
        if obs is None:
            why = f"{what} gave no result: {problem}"
        elif not obs.returned:
            why = f"{what} raised {obs.error}: {obs.message}"
        elif obs.value is None and obs.type != "NoneType":
            why = f"{what} returned a {obs.type} ({str(obs.repr)[:100]}), not a plain value"
        elif isinstance(expected, str) and obs.value != expected:
            why = f"{what} returned {str(obs.repr)[:100]}, expected {expected!r}"
        elif expected is True and not obs.value:
            why = f"{what} returned {str(obs.repr)[:100]}, expected a true value (the same user)"
        elif expected is False and obs.value:
            why = f"{what} returned {str(obs.repr)[:100]}, expected a false value (different users)"
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
