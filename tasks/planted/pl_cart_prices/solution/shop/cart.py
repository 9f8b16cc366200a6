"""Prices and cart totals."""

import re


def parse_price(text):
    """A price typed into the admin form, such as '12.34', '12' or '0.5', as integer cents."""
    match = re.fullmatch(r"(\d+)(?:\.(\d{1,2}))?", text)
    if not match:
        raise ValueError(f"malformed price: {text!r}")
    euros, fraction = match.groups()
    return int(euros) * 100 + int((fraction or "0").ljust(2, "0"))


def cart_total(lines):
    """The total of (price, quantity) pairs, prices as returned by parse_price."""
    return sum(price * quantity for price, quantity in lines)
