from billing.customers import format_customer_ref, parse_customer_ref


def test_refs_are_zero_padded_to_eight_digits():
    assert format_customer_ref(42) == "00000042"
    assert format_customer_ref(4217) == "00004217"
    assert format_customer_ref(12345678) == "12345678"


def test_eight_digit_refs_parse():
    assert parse_customer_ref("00004217") == 4217
    assert parse_customer_ref("00000001") == 1
