"""Judge of pl_customer_refs: python3 check.py /artifact

Calls format_customer_ref and parse_customer_ref as the artifact's user through memgrid_check.call (handed the old
hidden test's inputs alone, never the expected references) and asserts here what the old test asserted: references
are the customer number zero-padded to 8 digits, and 8-digit references parse back, with Python's == semantics (a
str or int subclass equal to the expected value passes, as `==` did; a value the encoding cannot carry fails).
"""
from memgrid_check import call, expect, judge

# (old test, function, argument, expected): the old hidden test's assertions, in its order
CASES = [
    ("test_refs_are_zero_padded_to_eight_digits", "format_customer_ref", 42, "00000042"),
    ("test_refs_are_zero_padded_to_eight_digits", "format_customer_ref", 4217, "00004217"),
    ("test_refs_are_zero_padded_to_eight_digits", "format_customer_ref", 12345678, "12345678"),
    ("test_eight_digit_refs_parse", "parse_customer_ref", "00004217", 4217),
    ("test_eight_digit_refs_parse", "parse_customer_ref", "00000001", 1),
]


def checks(artifact):
    # One artifact run per call: the references parse_customer_ref is handed are what format_customer_ref must
    # return, so no format call runs in a process that could see them.
    seen, problem = call(artifact, [{"module": "billing.customers", "function": function, "args": [arg]}
                                    for _, function, arg, _ in CASES], timeout=50, separate=True)
    for (test, function, arg, expected), o in zip(CASES, seen):
        yield test, expect(f"{function}({arg!r})", o, problem, lambda v: v == expected, repr(expected))
    yield None, problem


if __name__ == "__main__":
    judge(len(CASES), checks)
