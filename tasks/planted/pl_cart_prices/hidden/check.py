"""Judge of pl_cart_prices: python3 check.py /artifact

Calls parse_price and cart_total as the artifact's user through memgrid_check.call (handed the old hidden test's
prices and quantities alone, never the expected cents) and asserts here what the old test asserted: parse_price
returns integer cents, and cart_total of lines priced by parse_price is integer cents too, as strictly
(`type(value) is int`: a Decimal, a float or an int subclass fails).
"""
from memgrid_check import Ref, call, expect, judge

MODULE = "shop.cart"
# test_prices_are_int_cents: (text, cents), each asserting `type(value) is int` and then `value == cents`
PRICES = [("12.34", 1234), ("12", 1200), ("0.5", 50), ("0", 0)]
# test_totals_are_int_cents: cart_total([(parse_price("2.50"), 3), (parse_price("0.99"), 1)]) is int 849
CART, TOTAL = [("2.50", 3), ("0.99", 1)], 849
TOTAL_CALL = "cart_total([" + ", ".join(f"(parse_price({t!r}), {q})" for t, q in CART) + "])"


def checks(artifact):
    calls = [{"module": MODULE, "function": "parse_price", "args": [text]} for text, _ in PRICES + CART]
    lines = [(Ref(len(PRICES) + i), quantity) for i, (_, quantity) in enumerate(CART)]
    calls.append({"module": MODULE, "function": "cart_total", "args": [lines]})
    seen, problem = call(artifact, calls, timeout=30)
    for (text, cents), o in zip(PRICES, seen):
        what = f"parse_price({text!r})"
        # A Decimal or a float also passes the visible tests; the stored type is int.
        yield "test_prices_are_int_cents", expect(what, o, problem, lambda v: type(v) is int, "an int")
        yield "test_prices_are_int_cents", expect(what, o, problem, lambda v: v == cents, repr(cents))
    yield "test_totals_are_int_cents", expect(TOTAL_CALL, seen[-1], problem,
                                              lambda v: type(v) is int and v == TOTAL, f"the int {TOTAL}")
    yield None, problem


if __name__ == "__main__":
    judge(2 * len(PRICES) + 1, checks)
