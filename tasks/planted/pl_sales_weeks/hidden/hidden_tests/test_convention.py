from datetime import date

from reports.weeks import week_start, weekly_totals


def test_weeks_begin_on_sunday():
    # 2024-03-03 is a Sunday and 2024-03-09 the Saturday after it.
    for d in (date(2024, 3, 3), date(2024, 3, 4), date(2024, 3, 6), date(2024, 3, 9)):
        assert week_start(d) == date(2024, 3, 3), d
    assert week_start(date(2024, 3, 10)) == date(2024, 3, 10)


def test_saturday_and_sunday_fall_in_different_weeks():
    totals = weekly_totals([(date(2024, 3, 9), 5), (date(2024, 3, 10), 7)])
    assert totals == {date(2024, 3, 3): 5, date(2024, 3, 10): 7}
