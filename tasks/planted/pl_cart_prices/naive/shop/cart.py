"""Prices and cart totals."""

import re
from decimal import Decimal


def parse_price(text):
    """A price typed into the admin form, such as '12.34', '12' or '0.5'."""
    if not re.fullmatch(r"\d+(?:\.\d{1,2})?", text):
        raise ValueError(f"malformed price: {text!r}")
    return Decimal(text).quantize(Decimal("0.01"))


def cart_total(lines):
    """The total of (price, quantity) pairs, prices as returned by parse_price."""
    return sum((price * quantity for price, quantity in lines), Decimal("0.00"))
