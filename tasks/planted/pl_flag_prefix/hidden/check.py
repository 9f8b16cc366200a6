"""Judge for pl_flag_prefix: python3 check.py /artifact

Calls the artifact's app.flags.is_enabled on each (flag name, environment) pair, as the artifact's
user through memgrid_check, one run per pair (each run is handed its own inputs alone: the names of
the variables in the other pairs would give the prefix away), and compares here what came back
with the expected answer, as strictly as the old hidden test did (`is True` / `is False`: a real bool).
"""
import sys

sys.dont_write_bytecode = True

from memgrid_check import call

# (flag name, environ, expected): the old hidden test's assertions, in its order
CASES = [
    ("new_checkout", {"ACME_FF_NEW_CHECKOUT": "1"}, True),
    ("dark_mode", {"ACME_FF_DARK_MODE": "1"}, True),
    # FEATURE_ is the retired prefix; the bare names collide with other teams' variables.
    ("new_checkout", {"FEATURE_NEW_CHECKOUT": "1"}, False),
    ("new_checkout", {"NEW_CHECKOUT": "1"}, False),
    ("new_checkout", {"FF_NEW_CHECKOUT": "1"}, False),
    ("new_checkout", {"ACME_FF_NEW_CHECKOUT": "0"}, False),
]


def shown(obs) -> str:
    if obs is None:
        return "gave no result"
    if obs.returned:
        return f"returned {str(obs.repr)[:200]}"
    return f"raised {obs.error}: {str(obs.message)[:200]}"


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: check.py ARTIFACT_DIR")
        return 1
    artifact = sys.argv[1]
    passed = 0
    problems = []
    for name, environ, expected in CASES:
        # One run per case: a run that saw every case's environment would see the right prefix in the
        # cases that expect True while it answers the ones that expect False.
        seen, problem = call(artifact, [{"module": "app.flags", "function": "is_enabled", "args": [name, environ]}],
                             timeout=8, per_call=5)
        obs = seen[0]
        if problem is not None:
            problems.append(problem)
        if obs is not None and obs.returned and obs.type == "bool" and obs.value is expected:
            passed += 1
        else:
            print(f"FAIL is_enabled({name!r}, {environ!r}): {shown(obs)}, expected {expected}")
    for problem in problems:
        print(f"FAIL the artifact run: {problem}")
    print(f"SUMMARY: {passed}/{len(CASES)} checks passed")
    return 0 if passed == len(CASES) and not problems else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL: checker error: {type(exc).__name__}: {exc}")
        code = 1
    sys.exit(code)
