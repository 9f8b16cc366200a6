"""Prices: a live model without them is refused before anything runs; each token class is priced on its own."""

import pytest

from runner.agents.base import Usage
from runner.results.costs import SCRIPTED_PRICE, Price, price_for
from runner.errors import SpecError

LIVE = "claude-sonnet-4-5"
PRICES = {LIVE: {"input": 3.0, "output": 15.0, "cache_read": 0.3, "cache_creation": 3.75,
                 "as_of": "2026-11-01", "source": "the provider's price page"}}


def test_live_model_without_prices_is_refused_by_name():
    with pytest.raises(SpecError) as e:
        price_for(LIVE, {}, "grids/g.yaml")
    assert e.value.field == f"prices.{LIVE}"
    message = str(e.value)
    assert "\n" not in message
    assert message.startswith(f"grids/g.yaml: prices.{LIVE}: is missing")
    # Prices for another model do not stand in for this one.
    with pytest.raises(SpecError, match=f"prices.{LIVE}"):
        price_for(LIVE, {"claude-opus-4-1": PRICES[LIVE]}, "grids/g.yaml")


def test_live_model_with_prices():
    price = price_for(LIVE, PRICES, "grids/g.yaml")
    assert price == Price(3.0, 15.0, 0.3, 3.75, "2026-11-01", "the provider's price page")


def test_scripted_is_free_and_says_so():
    price = price_for("scripted", {}, "grids/g.yaml")
    assert (price.input, price.output, price.cache_read, price.cache_creation) == (0.0, 0.0, 0.0, 0.0)
    assert "scripted" in price.source and price.as_of == SCRIPTED_PRICE["as_of"]
    assert price.cost(Usage(fresh_input=142543, cache_read=5, cache_creation=7, output=774)) == 0.0


def test_each_class_priced_on_its_own():
    price = Price(**PRICES[LIVE])
    usage = Usage(fresh_input=1_000, cache_read=200_000, cache_creation=30_000, output=4_000)
    # 1000*3 + 200000*0.3 + 30000*3.75 + 4000*15 = 3000 + 60000 + 112500 + 60000 = 235500 per 1e6
    assert price.cost(usage) == 0.2355
    # Every class moves the cost by its own rate, and only its own.
    for field, rate in (("fresh_input", 3.0), ("cache_read", 0.3), ("cache_creation", 3.75), ("output", 15.0)):
        more = Usage(**{**usage.__dict__, field: getattr(usage, field) + 1_000_000})
        assert price.cost(more) == pytest.approx(0.2355 + rate), field


@pytest.mark.parametrize("missing", ["fresh_input", "cache_read", "cache_creation", "output"])
def test_cost_is_none_when_any_class_is_unobserved(missing):
    usage = Usage(**{**Usage(fresh_input=1, cache_read=2, cache_creation=3, output=4).__dict__, missing: None})
    assert Price(**PRICES[LIVE]).cost(usage) is None
    assert price_for("scripted", {}, "g").cost(usage) is None  # free, yet still unobserved: not 0
    assert Price(**PRICES[LIVE]).cost(Usage()) is None
