"""Customer references as printed on invoices."""


def format_customer_ref(number):
    """The reference printed on invoices for customer `number` (a positive int)."""
    if number < 1:
        raise ValueError(f"no reference for customer number {number}")
    return str(number)


def parse_customer_ref(ref):
    """The customer number a reference stands for; ValueError if `ref` is not a reference."""
    if not ref.isdigit() or int(ref) == 0:
        raise ValueError(f"not a customer reference: {ref!r}")
    return int(ref)
