"""Token prices and the cost of a cell.

A grid spec (or a preregistration's grid) carries prices per million tokens for each model it runs,
with `as_of` and `source`. A live model without prices refuses to start: a run whose costs cannot be
stated is not run. The scripted model server costs nothing and says so. Each token class is priced on
its own; the CLI's own cost figure is kept beside it, marked unverified, never used.
"""

from dataclasses import dataclass

from runner.agents.base import Usage
from runner.errors import SpecError
from runner.env.model_endpoint import is_scripted

SCRIPTED_PRICE = {"input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_creation": 0.0, "as_of": "2026-11-29",
                  "source": "memgrid's scripted model server: no provider, no spend"}


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cache_read: float
    cache_creation: float
    as_of: str
    source: str

    def cost(self, usage: Usage) -> float | None:
        """USD for one session; None when any class went unobserved (a killed session)."""
        counts = (usage.fresh_input, usage.cache_read, usage.cache_creation, usage.output)
        if any(c is None for c in counts):
            return None
        return self.cost_of(*counts)

    def cost_of(self, fresh_input: float, cache_read: float, cache_creation: float, output: float) -> float:
        """USD for these token counts."""
        return round((fresh_input * self.input + cache_read * self.cache_read + cache_creation * self.cache_creation
                      + output * self.output) / 1e6, 6)


def price_for(model: str, prices: dict, where) -> Price:
    """The model's price from the grid's `prices`; a live model without one is refused by name."""
    if is_scripted(model):
        return Price(**SCRIPTED_PRICE)
    if model not in prices:
        raise SpecError(where, f"prices.{model}", "is missing: a live model run must state its prices before it starts",
                        f"add prices: {{{model}: {{input: .., output: .., cache_read: .., cache_creation: .., "
                        "as_of: YYYY-MM-DD, source: <where the prices come from>}} (USD per million tokens)")
    return Price(**prices[model])
