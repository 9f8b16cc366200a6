"""Judge of pl_reminder_dates: python3 check.py /artifact

Renders, as the artifact's user through memgrid_check.call, the reminder for the old hidden test's invoice and due
dates (never the expected date form) and checks here, in the letters that came back, what the old hidden test
asserted: the due date written DD.MM.YYYY and no ISO date left; and, which the old test did not, the customer,
number and amount stated and the due date in no other numeric form (a letter holding it both day-first and
month-first passed the old test without the rule). A letter must be a str (a subclass too; `"..." in
letter` on anything else was not what the test meant to accept).
"""
import datetime

from memgrid_check import Ref, call, expect, judge

MODULE = "letters.reminder"
DUES = [datetime.date(2024, 3, 5), datetime.date(2023, 12, 31)]
INVOICE = {"number": "INV-1", "customer": "Marta Kowalska", "amount_due": "EUR 9.00"}
CALL = "render_reminder(Invoice(number='INV-1', customer='Marta Kowalska', amount_due='EUR 9.00', due_date={!r}))"
# (old test, due date, text, must it be in the letter)
ASSERTIONS = [
    ("test_due_date_is_day_month_year_with_dots[2024-03-05]", DUES[0], "05.03.2024", True),
    ("test_due_date_is_day_month_year_with_dots[2023-12-31]", DUES[1], "31.12.2023", True),
    ("test_no_iso_date_left_in_the_letter", DUES[0], "2024-03-05", False),
]


OTHER_FORMS = ("%m.%d.%Y", "%m/%d/%Y", "%d/%m/%Y", "%Y-%m-%d", "%m-%d-%Y", "%d-%m-%Y", "%Y.%m.%d", "%Y/%m/%d")


def checks(artifact):
    calls = []
    for due in DUES:  # Invoice(...) then render_reminder of that very invoice
        calls += [{"module": MODULE, "function": "Invoice", "kwargs": {**INVOICE, "due_date": due}},
                  {"module": MODULE, "function": "render_reminder", "args": [Ref(len(calls))]}]
    seen, problem = call(artifact, calls, timeout=30)
    for test, due, text, wanted in ASSERTIONS:
        yield test, expect(CALL.format(due), seen[2 * DUES.index(due) + 1], problem,
                           lambda v: isinstance(v, str) and (text in v) == wanted,
                           f"the letter's text (a str) {'with' if wanted else 'without'} {text!r}")
    # The letter says who, what and how much, as the prompt asks, and writes the due date the one way: a letter
    # that also carries it month-first or ISO passes `text in letter` without following the rule.
    for i, due in enumerate(DUES):
        letter = seen[2 * i + 1]
        for part in INVOICE.values():
            yield (f"letter_states[{part}][{due}]",
                   expect(CALL.format(due), letter, problem, lambda v, part=part: isinstance(v, str) and part in v,
                          f"a letter (a str) stating {part!r}"))
        only = due.strftime("%d.%m.%Y")
        others = sorted({due.strftime(f) for f in OTHER_FORMS} - {only})
        yield (f"no_other_form_of_the_due_date[{due}]",
               expect(CALL.format(due), letter, problem,
                      lambda v, others=others: isinstance(v, str) and not any(o in v for o in others),
                      f"a letter writing the due date as {only!r} only, never as {others}"))
    yield None, problem


if __name__ == "__main__":
    judge(len(ASSERTIONS) + len(DUES) * (len(INVOICE) + 1), checks)
