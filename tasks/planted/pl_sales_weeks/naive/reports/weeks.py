"""Reporting weeks."""

from collections import defaultdict
from datetime import timedelta


def week_start(d):
    """The first day (a date) of the reporting week that contains the date `d`."""
    return d - timedelta(days=d.weekday())


def weekly_totals(sales):
    """{week_start: total amount} for a list of (date, amount) pairs."""
    totals = defaultdict(int)
    for d, amount in sales:
        totals[week_start(d)] += amount
    return dict(totals)
