"""Reporting periods for bookings."""
from datetime import date


def quarter_label(day: date) -> str:
    """The label of the reporting quarter a booking made on `day` is filed under."""
    raise NotImplementedError
