"""The two-session judge, rule by rule."""

import pytest

from runner.protocols.two_session.judge import REASONS, judge

M, V = "12345.60", "V-48213"

CASES = [
    # output, gold, score, reason
    ("12345.60", M, 1, "exact"),
    ("12345.6", M, 1, "exact"),
    ("$12,345.60", M, 1, "exact"),
    ("12,345.60 USD", M, 1, "exact"),
    ("  `12345.60`  ", M, 1, "exact"),
    ('"$12,345.6"', M, 1, "exact"),
    ("12345", "12345.00", 1, "exact"),
    ("Let me think.\n\n12345.60\n\n", M, 1, "exact"),
    ("UNKNOWN", M, 0, "unknown"),
    ("unknown.", M, 0, "unknown"),
    ("12345.60 maybe\nUnknown!", M, 0, "unknown"),
    ("I half recall 12,345.60\nAnswer: UNKNOWN", M, 0, "unknown"),  # not rescued by the whole output
    ("**UNKNOWN**", M, 0, "unknown"),
    ("**12,345.60**", M, 1, "exact"),
    ("It is 12,345.60 I believe", M, 1, "candidate"),
    ("AR-7F3K closing balance = 12345.60", M, 1, "candidate"),
    ("AR-7F3K total debits in 2026-03 = 12345.60", M, 1, "candidate"),  # the month is not an amount
    ("on 2026-03-14, V-12345 came to 12345.60", M, 1, "candidate"),  # nor a date, nor a voucher id
    ("12345.60 (about 12,345.6 dollars)", M, 1, "candidate"),  # one value written twice is one candidate
    ("12345.60 from 3 rows, 42 debits, 999.99 max", M, 1, "candidate"),  # under 4 integer digits: dropped
    ("12345.60 12000.00 9876.54", M, 0, "shotgun"),
    ("either 11,000.00 or 12,345.60", M, 0, "shotgun"),
    ("12345.61", M, 0, "wrong"),
    ("12345.605", M, 0, "wrong"),  # not silently rounded onto the gold
    ("-12345.60", M, 0, "wrong"),
    ("The total is 99,999.99", M, 0, "wrong"),
    ("V-48213", V, 1, "exact"),
    ("v-48213", V, 1, "exact"),
    ("`V-48213`", V, 1, "exact"),
    ("AR-7F3K voucher of the 3rd largest debit = V-48213", V, 1, "candidate"),
    ("V-48213 for 9,800.00", V, 1, "candidate"),  # amounts are not voucher candidates
    ("V-48213 V-48214", V, 0, "shotgun"),
    ("V-48214", V, 0, "wrong"),
    ("48213", V, 0, "no_candidate"),
    ("V-48213 2026-01-05", "1234.00", 0, "no_candidate"),  # neither counts as money
    ("The value I stored was 12,345.60.\nThat is my answer.", M, 1, "whole_output"),
    ("I remembered V-48213.\nDone", V, 1, "whole_output"),
    ("it was 12,345.60 or 12,000.00\nnot sure", M, 0, "shotgun"),
    ("it was 11,111.11\nnot sure", M, 0, "wrong"),
    ("no idea at all\nsorry", M, 0, "no_candidate"),
    ("", M, 0, "empty"),
    ("  \n\n \t\n", M, 0, "empty"),
]


@pytest.mark.parametrize("output,gold,score,reason", CASES)
def test_judge(output, gold, score, reason):
    v = judge(output, gold)
    assert (v.score, v.reason) == (score, reason), v
    assert v.reason in REASONS


def test_verdict_records_last_line_and_candidates():
    v = judge("first\n  12345.60 11111.11  \n\n", M)
    assert v.last_line == "12345.60 11111.11"
    assert v.candidates == ("12345.60", "11111.11")
    assert judge("x\n12345.60", M).candidates == (M,)


def test_every_reason_is_reachable():
    assert {judge(o, g).reason for o, g, _, _ in CASES} == set(REASONS)
