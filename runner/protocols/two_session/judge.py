"""The two-session judge: deterministic, from the session's output and the gold alone.

The last non-empty line decides. UNKNOWN scores 0. The exact value (money normalised) scores 1.
Otherwise the line's candidates of the gold's kind are extracted (voucher ids; or money amounts,
once voucher ids and ISO dates are removed, of at least 4 integer digits): the gold alone scores 1,
the gold among others is a shotgun and scores 0, anything else is wrong. A last line with no
candidate falls back to the whole output, where only the gold as the sole candidate scores 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

REASONS = ("exact", "unknown", "candidate", "shotgun", "wrong", "no_candidate", "whole_output", "empty")

_VOUCHER = re.compile(r"(?<![A-Za-z0-9-])[A-Za-z]{1,3}-\d{3,}(?![A-Za-z0-9])")
# An ISO date or month ("2026-03", as in the keys) is not an amount.
_ISO = re.compile(r"(?<![\d-])\d{4}-\d{2}(?:-\d{2})?(?![\d-])")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_GROUPED = re.compile(r"\d{1,3}(?:,\d{3})+")
_SURROUND = " \t`'\"*\u2018\u2019\u201c\u201d"  # markdown bold too: **12345.67**
# UNKNOWN alone, or after a short label ("Answer: UNKNOWN"): a declared blank is never rescued by
# the whole-output fallback.
_UNKNOWN = re.compile(r"(?:[A-Za-z ]{1,30}:\s*)?unknown[.!?]*", re.IGNORECASE)
_CENT = Decimal("0.01")


@dataclass(frozen=True)
class Verdict:
    score: int  # 0 or 1
    reason: str  # one of REASONS
    last_line: str
    candidates: tuple[str, ...]


def _money(text: str) -> str | None:
    """"12345.6", "$12,345.60", "12345.60 USD" -> "12345.60"; None when not an amount."""
    s = text.strip(_SURROUND)
    s = re.sub(r"usd", "", s, flags=re.IGNORECASE).replace("$", "").replace(",", "").strip(_SURROUND)
    if not re.fullmatch(r"-?\d+(?:\.\d+)?", s):
        return None
    return _canon(Decimal(s))


def _canon(d: Decimal) -> str:
    # Two decimals when that loses nothing; otherwise keep the digits, so 1234.567 never equals 1234.57.
    return f"{d:.2f}" if d == d.quantize(_CENT) else str(d.normalize())


def _vouchers(text: str) -> list[str]:
    return [v.upper() for v in _VOUCHER.findall(text)]


def _amounts(text: str) -> list[str]:
    text = _ISO.sub(" ", _VOUCHER.sub(" ", text))
    out = []
    for m in _NUMBER.finditer(text):
        token = m.group().rstrip(",")
        whole, _, frac = token.partition(".")
        # "12,345" is one grouped number; "1234,5678" is a list of two.
        parts = [whole.replace(",", "")] if _GROUPED.fullmatch(whole) else [p for p in whole.split(",") if p]
        for i, part in enumerate(parts):
            digits = part + ("." + frac if frac and i == len(parts) - 1 else "")
            try:
                value = Decimal(digits)
            except InvalidOperation:
                continue
            before = text[max(0, m.start() - 2):m.start()] if i == 0 else ""
            if before.endswith("-") and not before[:1].isalnum():
                value = -value  # "-1234.56" is not 1234.56
            if abs(value) >= 1000:  # fewer than 4 integer digits: counts, ordinals, cents, never an answer
                out.append(_canon(value))
    return out


def _candidates(text: str, voucher: bool) -> tuple[str, ...]:
    found = _vouchers(text) if voucher else _amounts(text)
    return tuple(dict.fromkeys(found))  # distinct, in order of appearance


def judge(output: str, gold: str) -> Verdict:
    lines = [ln.strip() for ln in (output or "").splitlines() if ln.strip()]
    if not lines:
        return Verdict(0, "empty", "", ())
    last = lines[-1]
    g = gold.strip(_SURROUND)
    voucher = bool(_VOUCHER.fullmatch(g))
    g = g.upper() if voucher else (_money(g) or g)
    if _UNKNOWN.fullmatch(last.strip(_SURROUND)):
        return Verdict(0, "unknown", last, ())
    exact = last.strip(_SURROUND).upper() if voucher else _money(last)
    if exact == g:
        return Verdict(1, "exact", last, (g,))
    cands = _candidates(last, voucher)
    if cands:
        if cands == (g,):
            return Verdict(1, "candidate", last, cands)
        return Verdict(0, "shotgun" if g in cands else "wrong", last, cands)
    cands = _candidates("\n".join(lines), voucher)
    if cands == (g,):
        return Verdict(1, "whole_output", last, cands)
    if not cands:
        return Verdict(0, "no_candidate", last, ())
    return Verdict(0, "shotgun" if g in cands else "wrong", last, cands)
