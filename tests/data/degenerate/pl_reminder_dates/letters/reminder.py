"""Payment reminders."""

from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class Invoice:
    number: str
    customer: str
    amount_due: str  # already formatted with its currency, e.g. 'EUR 1,250.00'
    due_date: date


def render_reminder(invoice):
    """Degenerate: no customer, no invoice number, no amount; the due date day-first AND month-first."""
    d = invoice.due_date
    return f"{d:%d.%m.%Y} {d:%m.%d.%Y}"
