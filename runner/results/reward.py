"""A hosted benchmark's reward: its raw quality mapped onto the scale its card defines.

The card of a benchmark may fix a reference quality b (what a reference system reaches) and an integer anchor a on
0..100 (the score b stands for), and map raw quality q on 0..1 piecewise linearly through (0, 0), (b, a / 100) and
(1, 1):

    reward(q) = (a / 100) * q / b                              if 0 <= q <= b
                a / 100 + (1 - a / 100) * (q - b) / (1 - b)    if b < q <= 1

The reward keeps full precision; the displayed score is 100 x reward rounded to one decimal place. Raw quality is
always reported beside it, and a measurement that is not valid gets no reward at all (`Reward.invalid`), never a low
one: the protocol says when a measurement is valid, this module only maps.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class RewardMapping:
    """The card's two constants: reference quality b (0 < b < 1) and the score anchor a (0 < a < 100)."""
    reference: float
    anchor: int

    def __post_init__(self):
        if not 0 < self.reference < 1 or not 0 < self.anchor < 100:
            raise ValueError(f"a reward mapping needs 0 < b < 1 and 0 < a < 100, not b={self.reference}, a={self.anchor}")

    def reward(self, quality: float) -> float:
        if not 0 <= quality <= 1:
            raise ValueError(f"raw quality {quality} is not on 0..1")
        low = self.anchor / 100
        if quality <= self.reference:
            return low * quality / self.reference
        return low + (1 - low) * (quality - self.reference) / (1 - self.reference)

    def of(self, quality: float | None, invalid: str | None) -> "Reward":
        """The reward of a measurement, or why it has none (`invalid`, or no quality measured)."""
        if invalid is None and quality is None:
            invalid = "no question was scored"
        if invalid is not None:
            return Reward(quality, None, None, invalid)
        reward = self.reward(quality)
        return Reward(quality, reward, round(100 * reward, 1), None)


@dataclass(frozen=True)
class Reward:
    quality: float | None  # raw quality, 0..1
    reward: float | None  # full precision; None when the measurement is invalid
    score: float | None  # 100 x reward, one decimal place
    invalid: str | None  # why there is no reward

    def shown(self) -> str:
        """The displayed score, or 'invalid: <why>'."""
        return f"invalid: {self.invalid}" if self.invalid else f"{self.score:.1f}"
