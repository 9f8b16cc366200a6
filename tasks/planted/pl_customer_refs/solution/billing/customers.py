"""Customer references as printed on invoices."""

WIDTH = 8  # widened from 6 when the merged shop's customer numbers no longer fitted


def format_customer_ref(number):
    """The reference printed on invoices for customer `number` (a positive int)."""
    if number < 1 or number >= 10**WIDTH:
        raise ValueError(f"no reference for customer number {number}")
    return f"{number:0{WIDTH}d}"


def parse_customer_ref(ref):
    """The customer number a reference stands for; ValueError if `ref` is not a reference."""
    if len(ref) != WIDTH or not ref.isdigit() or int(ref) == 0:
        raise ValueError(f"not a customer reference: {ref!r}")
    return int(ref)
