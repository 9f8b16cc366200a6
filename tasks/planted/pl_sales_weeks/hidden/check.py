"""Judge of pl_sales_weeks: python3 check.py /artifact

Calls week_start and weekly_totals as the artifact's user through memgrid_check.call (handed the old hidden test's
dates and sales, never the expected weeks) and compares here what came back with the reporting weeks the stores
plan with: Sunday to Saturday. The old hidden test's six assertions, each compared with Python's == (a datetime is
not the date, a defaultdict equals the dict).
"""
from datetime import date

from memgrid_check import call, expect, judge

MODULE = "reports.weeks"
# test_weeks_begin_on_sunday: (day, its week's Sunday)
STARTS = [(date(2024, 3, 3), date(2024, 3, 3)), (date(2024, 3, 4), date(2024, 3, 3)),
          (date(2024, 3, 6), date(2024, 3, 3)), (date(2024, 3, 9), date(2024, 3, 3)),
          (date(2024, 3, 10), date(2024, 3, 10))]
# test_saturday_and_sunday_fall_in_different_weeks
SALES = [(date(2024, 3, 9), 5), (date(2024, 3, 10), 7)]
TOTALS = {date(2024, 3, 3): 5, date(2024, 3, 10): 7}


def checks(artifact):
    seen, problem = call(artifact, [{"module": MODULE, "function": "week_start", "args": [day]} for day, _ in STARTS]
                         + [{"module": MODULE, "function": "weekly_totals", "args": [SALES]}], timeout=30)
    for (day, sunday), o in zip(STARTS, seen):
        yield (f"test_weeks_begin_on_sunday[{day}]",
               expect(f"week_start({day!r})", o, problem, lambda v: v == sunday, repr(sunday)))
    yield ("test_saturday_and_sunday_fall_in_different_weeks",
           expect(f"weekly_totals({SALES!r})", seen[-1], problem, lambda v: v == TOTALS, repr(TOTALS)))
    yield None, problem


if __name__ == "__main__":
    judge(len(STARTS) + 1, checks)
