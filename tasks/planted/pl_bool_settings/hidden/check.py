"""Judge of pl_bool_settings: python3 check.py /artifact

Calls parse_bool as the artifact's user through memgrid_check.call (handed the old hidden test's strings alone,
never the expected answers) and asserts here what the old test asserted: parse_bool("true") is True and
parse_bool("false") is False (the bool singletons, as `is` required), and every other spelling raises ValueError
(a subclass of ValueError too, as pytest.raises(ValueError) accepted).
"""
from memgrid_check import call, expect, expect_raise, judge

RAISES = ValueError  # what each other spelling must raise
# (old test, value, expected: True / False, or RAISES): the old hidden test's assertions, in its order
CASES = [
    ("test_the_two_literals", "true", True),
    ("test_the_two_literals", "false", False),
    *(("test_every_other_spelling_raises", value, RAISES)
      for value in ["1", "0", "yes", "no", "on", "off", "TRUE", "True", "False"]),
]


def checks(artifact):
    seen, problem = call(artifact, [{"module": "svc.settings", "function": "parse_bool", "args": [value]}
                                    for _, value, _ in CASES], timeout=30)
    for (test, value, expected), o in zip(CASES, seen):
        what = f"parse_bool({value!r})"
        yield test, (expect_raise(what, o, problem, RAISES) if expected is RAISES
                     else expect(what, o, problem, lambda v: v is expected, repr(expected)))
    yield None, problem


if __name__ == "__main__":
    judge(len(CASES), checks)
