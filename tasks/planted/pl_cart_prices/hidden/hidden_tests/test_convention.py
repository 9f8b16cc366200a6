from shop.cart import cart_total, parse_price


def test_prices_are_int_cents():
    for text, cents in [("12.34", 1234), ("12", 1200), ("0.5", 50), ("0", 0)]:
        value = parse_price(text)
        # A Decimal or a float also passes the visible tests; the stored type is int.
        assert type(value) is int, f"{text}: {type(value).__name__}"
        assert value == cents


def test_totals_are_int_cents():
    total = cart_total([(parse_price("2.50"), 3), (parse_price("0.99"), 1)])
    assert type(total) is int and total == 849
