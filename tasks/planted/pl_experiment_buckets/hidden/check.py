"""Judge for pl_experiment_buckets: python3 check.py /artifact

Calls the artifact's experiments.buckets.bucket on every user id, as the artifact's user through
memgrid_check (the run is handed the user ids alone), and compares each returned bucket here with
the mobile SDK's: zlib.crc32 of the UTF-8 user id, mod 100. The same assertion, user by user, as
the old hidden test: `bucket(user) == zlib.crc32(user.encode("utf-8")) % 100`.
"""
import sys

sys.dont_write_bytecode = True

import zlib

from memgrid_check import call

USERS = ["user-7", "alice@example.org", "Zoë", "", "8f14e45f-ceea-467f-a0e6-1d2b0b4b7f3c"] + [f"u{n}" for n in range(200)]


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
    seen, problem = call(artifact, [{"module": "experiments.buckets", "function": "bucket", "args": [user]} for user in USERS],
                         timeout=40, per_call=5)
    passed = 0
    for user, obs in zip(USERS, seen):
        expected = zlib.crc32(user.encode("utf-8")) % 100
        # == as the old test had it: a plain number equal to the SDK's bucket (the run's copy of the value)
        if obs is not None and obs.returned and type(obs.value) in (int, float, bool) and obs.value == expected:
            passed += 1
        else:
            print(f"FAIL bucket({user!r}): {shown(obs)}, expected {expected} (the mobile SDK's bucket)")
    if problem is not None:
        print(f"FAIL the artifact run: {problem}")
    print(f"SUMMARY: {passed}/{len(USERS)} checks passed")
    return 0 if passed == len(USERS) and problem is None else 1


if __name__ == "__main__":
    try:
        code = main()
    except BaseException as exc:
        print(f"FAIL: checker error: {type(exc).__name__}: {exc}")
        code = 1
    sys.exit(code)
