"""Judge of pl_validation_errors: python3 check.py /artifact

Calls validation_error as the artifact's user through memgrid_check.call (helpers.py unpacks its answer as the old
test did; it is handed the old hidden test's field and message, never the expected response) and compares here
what came back with the response the frontend's form library parses: HTTP 422 and {"error": {"code":
"validation_failed", "field": ..., "message": ...}}. The old hidden test's two assertions, with Python's == (so
422.0 or HTTPStatus 422 pass `status == 422` as they did); and one more field and message than the old test's,
so an answer that ignores its arguments (the visible tests' one response) fails.
"""
import os

from memgrid_check import call, expect, judge

FIELD, MESSAGE = "email", "is not an email address"
CALL = f"validation_error({FIELD!r}, {MESSAGE!r})"
# (old test, which part of (status, body), expected): one call each, as each old test made its own
CASES = [("test_status_is_422", 0, 422),
         ("test_body_is_the_error_envelope", 1, {"error": {"code": "validation_failed", "field": FIELD, "message": MESSAGE}})]
# A second field and message (not the visible tests' pair): the body must carry the arguments, not a constant.
FIELD2, MESSAGE2 = "postcode", "must have 5 digits"
CASES2 = [("body_carries_its_arguments", 1, {"error": {"code": "validation_failed", "field": FIELD2, "message": MESSAGE2}})]


def checks(artifact):
    seen, problem = call(artifact, [{"function": "unpacked", "args": [FIELD, MESSAGE]} for _ in CASES], timeout=30,
                         helpers=os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers.py"))
    for (test, part, expected), o in zip(CASES, seen):
        yield test, expect(CALL, o, problem, lambda v: type(v) is tuple and len(v) == 2 and v[part] == expected,
                           f"the {('status', 'body')[part]} {expected!r}")
    yield None, problem
    seen2, problem2 = call(artifact, [{"function": "unpacked", "args": [FIELD2, MESSAGE2]}], timeout=30,
                           helpers=os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers.py"))
    for (test, part, expected), o in zip(CASES2, seen2):
        yield test, expect(f"validation_error({FIELD2!r}, {MESSAGE2!r})", o, problem2,
                           lambda v: type(v) is tuple and len(v) == 2 and v[part] == expected, f"the body {expected!r}")
    yield None, problem2


if __name__ == "__main__":
    judge(len(CASES) + len(CASES2), checks)
