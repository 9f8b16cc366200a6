"""Judge of pl_audit_log_lines: python3 check.py /artifact

Calls format_line as the artifact's user through memgrid_check.call (handed the old hidden test's events and
fields alone, never the expected lines) and asserts here what the old test asserted: a line is msg=<event> then
the fields sorted by key, as key=value, and a value with a space or '=' is double-quoted; with Python's ==
semantics (a str subclass equal to the expected line passes, as `==` did).
"""
from memgrid_check import call, expect, judge

# (old test, event, fields in the order the test passed them, expected): its assertions, in its order
CASES = [
    ("test_event_first_then_fields_sorted_by_key", "user.login", {"user": "alice", "ip": "10.0.0.7"},
     "msg=user.login ip=10.0.0.7 user=alice"),
    ("test_event_first_then_fields_sorted_by_key", "cart.updated", {"items": 3}, "msg=cart.updated items=3"),
    ("test_values_with_spaces_or_equals_are_double_quoted", "note.added", {"text": "hello world"},
     'msg=note.added text="hello world"'),
    ("test_values_with_spaces_or_equals_are_double_quoted", "query.run", {"sql": "a=1"}, 'msg=query.run sql="a=1"'),
]


def checks(artifact):
    # format_line gets its keyword arguments in the order the test wrote them.
    seen, problem = call(artifact, [{"module": "audit.log", "function": "format_line", "args": [event], "kwargs": fields}
                                    for _, event, fields, _ in CASES], timeout=30)
    for (test, event, fields, expected), o in zip(CASES, seen):
        what = "format_line(" + ", ".join([repr(event)] + [f"{k}={v!r}" for k, v in fields.items()]) + ")"
        yield test, expect(what, o, problem, lambda v: v == expected, repr(expected))
    yield None, problem


if __name__ == "__main__":
    judge(len(CASES), checks)
