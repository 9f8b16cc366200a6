from datetime import date

from letters.reminder import Invoice, render_reminder


def _letter(due):
    return render_reminder(Invoice(number="INV-1", customer="Marta Kowalska", amount_due="EUR 9.00", due_date=due))


def test_due_date_is_day_month_year_with_dots():
    assert "05.03.2024" in _letter(date(2024, 3, 5))
    assert "31.12.2023" in _letter(date(2023, 12, 31))


def test_no_iso_date_left_in_the_letter():
    # The retired form: a letter carrying both would still confuse the dunning team.
    assert "2024-03-05" not in _letter(date(2024, 3, 5))
