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
    """The body of the reminder letter for an overdue `invoice`."""
    # The dunning team that answers these letters reads dates day first, dot separated.
    due = invoice.due_date.strftime("%d.%m.%Y")
    return (
        f"Dear {invoice.customer},\n\n"
        f"our records show that invoice {invoice.number} over {invoice.amount_due} was due on {due} "
        "and has not been paid yet. Please transfer the amount within the next 14 days.\n\n"
        "If you have already paid, please disregard this letter.\n"
    )
