"""Two-session recall cases: generated, never authored.

A case is only {id, seed, derivation, params, size}. Its accounts-receivable ledger is re-made from
the seed (`table_for`) and its gold answer computed from the table (`answer`), so the case list
itself never holds an answer. Session 1 sees the table (`step1_prompt`) and is asked to remember one
derived value under a public label (`key`); session 2, in a fresh sandbox, is asked for it by that
label (`step2_prompt`). `build_guards` checks what would make the suite leak or be guessable.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import random
import re
from collections import Counter
from dataclasses import dataclass
from datetime import date, timedelta

DERIVATIONS = ("closing_balance", "month_debits", "counterparty_debits", "largest_debit_voucher",
               "nth_largest_debit_voucher")
MONEY_DERIVATIONS = frozenset({"closing_balance", "month_debits", "counterparty_debits"})

# Names hold no digits, so no label or prompt line can contain a number that looks like an answer.
COUNTERPARTIES = ("Halvorsen Supply", "Brightwater Foods", "Kestrel Logistics", "Ambrose & Lyle", "Teller Fabrication",
                  "Quarry Lane Print", "Osei Medical", "Pinecrest Hardware", "Vantage Office", "Lindqvist Marine")
CUSTOMERS = ("Norcastle Dental Group", "Harrow Street Bakery", "Meridian Tool Hire", "Caldera Systems",
             "Wexley Veterinary", "Fenwick & Daughters", "Otterburn Clinics", "Sable Point Hotels")
MONTHS = ("2026-01", "2026-02", "2026-03", "2026-04")
_FIRST_DAY = date(2026, 1, 1)
_DAYS = (date(2026, 4, 30) - _FIRST_DAY).days + 1
_LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ"  # no I or O: ledger ids read unambiguously
_MAX_ATTEMPTS = 10_000
_ORDINALS = {2: "2nd", 3: "3rd", 4: "4th"}
_VOUCHER_RE = re.compile(r"^V-\d+$")


@dataclass(frozen=True)
class Row:
    date: str  # ISO yyyy-mm-dd
    voucher: str  # "V-48213"
    counterparty: str
    debit_cents: int
    credit_cents: int
    balance_cents: int


@dataclass(frozen=True)
class Table:
    ledger_id: str  # "AR-7F3K"
    account: str  # the customer
    opening_cents: int
    rows: tuple[Row, ...]


@dataclass(frozen=True)
class Case:
    id: str  # "ts-0007"
    seed: int
    derivation: str  # one of DERIVATIONS
    params: dict  # month / counterparty / n, as the derivation needs (a dict: a Case is not hashable)
    size: int  # rows in the table, 10..40


# --- money -------------------------------------------------------------------------------------------

def plain(cents: int) -> str:
    """The answer form: 12345.67 (no sign, currency or separators)."""
    return f"{cents // 100}.{cents % 100:02d}"


def pretty(cents: int) -> str:
    """The table form: 12,345.67."""
    return f"{cents // 100:,}.{cents % 100:02d}"


# --- tables ------------------------------------------------------------------------------------------

def generate_table(seed: int, size: int, attempt: int = 0) -> Table:
    """One seeded ledger of `size` rows; `attempt` re-rolls it when a derivation rejects it."""
    if not 10 <= size <= 40:
        raise ValueError(f"size must be 10..40, got {size}")
    # A str seed hashes with sha512 inside random, independent of PYTHONHASHSEED.
    rng = random.Random(f"memgrid/two-session/table/{seed}/{size}/{attempt}")
    # digit, letter, digit, letter: never all digits, so a ledger id cannot pass for a voucher or an amount
    ledger_id = "AR-" + "".join(rng.choice(pool) for pool in ("0123456789", _LETTERS) * 2)
    account = rng.choice(CUSTOMERS)
    opening = rng.randint(2_000_00, 45_000_00)
    days = sorted(rng.sample(range(_DAYS), size))
    voucher = rng.randint(10_000, 89_000)  # a random base: a voucher answer cannot be guessed from the numbering
    balance, rows = opening, []
    for day in days:
        voucher += rng.randint(1, 4)
        # Credits never take the balance below zero: a receivable ledger, and answers stay unsigned.
        if balance < 500_00 or rng.random() < 0.6:
            debit, credit = rng.randint(150_00, 9_800_00), 0
        else:
            debit, credit = 0, rng.randint(100_00, min(balance, 12_000_00))
        balance += debit - credit
        rows.append(Row(date=(_FIRST_DAY + timedelta(days=day)).isoformat(), voucher=f"V-{voucher}",
                        counterparty=rng.choice(COUNTERPARTIES), debit_cents=debit, credit_cents=credit,
                        balance_cents=balance))
    return Table(ledger_id=ledger_id, account=account, opening_cents=opening, rows=tuple(rows))


def _gold(case: Case, table: Table) -> str | None:
    """The answer, or None when this table cannot carry the case (re-roll it)."""
    d, p = case.derivation, case.params
    if d in MONEY_DERIVATIONS:
        if d == "closing_balance":
            cents = table.rows[-1].balance_cents if table.rows else table.opening_cents
        elif d == "month_debits":
            cents = sum(r.debit_cents for r in table.rows if r.date.startswith(p["month"] + "-"))
        else:
            cents = sum(r.debit_cents for r in table.rows if r.counterparty == p["counterparty"])
        return plain(cents) if cents >= 1000_00 else None  # >= 4 integer digits: not guessable
    n = 1 if d == "largest_debit_voucher" else p["n"]
    debits = sorted((r for r in table.rows if r.debit_cents), key=lambda r: r.debit_cents, reverse=True)
    if len(debits) < n:
        return None
    pick = debits[n - 1]
    if sum(r.debit_cents == pick.debit_cents for r in debits) != 1:
        return None  # a tie would make the voucher ambiguous
    return pick.voucher


def derive(case: Case, table: Table) -> str:
    """The gold answer of `case` on `table`: money as 12345.67, a voucher as its id."""
    if case.derivation not in DERIVATIONS:
        raise ValueError(f"unknown derivation {case.derivation!r}")
    gold = _gold(case, table)
    if gold is None:
        raise ValueError(f"{case.id}: this table cannot carry {case.derivation} {case.params}")
    return gold


@functools.lru_cache(maxsize=4096)
def _table(seed: int, size: int, derivation: str, params: tuple) -> Table:
    case = Case(id="", seed=seed, derivation=derivation, params=dict(params), size=size)
    for attempt in range(_MAX_ATTEMPTS):
        table = generate_table(seed, size, attempt)
        if _gold(case, table) is not None:
            return table
    raise RuntimeError(f"no table for seed {seed} after {_MAX_ATTEMPTS} attempts")


def table_for(case: Case) -> Table:
    """The case's table: the first attempt (0, 1, ...) from its seed that can carry its derivation."""
    return _table(case.seed, case.size, case.derivation, tuple(sorted(case.params.items())))


def answer(case: Case) -> str:
    return derive(case, table_for(case))


# --- cases -------------------------------------------------------------------------------------------

def _seed(base_seed: int, index: int, salt: int) -> int:
    digest = hashlib.sha256(f"memgrid/two-session/case/{base_seed}/{index}/{salt}".encode()).digest()
    return int.from_bytes(digest[:6], "big")


def generate_cases(n: int, base_seed: int = 0) -> list[Case]:
    """`n` cases with unique seeds; derivations round-robin so each appears once n >= 5."""
    cases, seen = [], set()
    for i in range(n):
        salt, seed = 0, _seed(base_seed, i, 0)
        while seed in seen:
            salt += 1
            seed = _seed(base_seed, i, salt)
        seen.add(seed)
        rng = random.Random(f"memgrid/two-session/params/{seed}")
        derivation = DERIVATIONS[i % len(DERIVATIONS)]
        params: dict = {}
        if derivation == "month_debits":
            params["month"] = rng.choice(MONTHS)
        elif derivation == "counterparty_debits":
            params["counterparty"] = rng.choice(COUNTERPARTIES)
        elif derivation == "nth_largest_debit_voucher":
            params["n"] = rng.randint(2, 4)
        cases.append(Case(id=f"ts-{i:04d}", seed=seed, derivation=derivation, params=params,
                          size=rng.randint(10, 40)))
    return cases


def _phrase(case: Case) -> str:
    d, p = case.derivation, case.params
    return {"closing_balance": lambda: "closing balance",
            "month_debits": lambda: f"total debits in {p['month']}",
            "counterparty_debits": lambda: f"total debits for {p['counterparty']}",
            "largest_debit_voucher": lambda: "voucher of the largest debit",
            "nth_largest_debit_voucher": lambda: f"voucher of the {_ORDINALS[p['n']]} largest debit"}[d]()


def key(case: Case) -> str:
    """The public label both prompts (and the agent's memory) use: "AR-7F3K closing balance"."""
    return f"{table_for(case).ledger_id} {_phrase(case)}"


def _in_words(case: Case) -> str:
    d, p = case.derivation, case.params
    if d == "closing_balance":
        return "the closing balance: the balance after the last row (opening balance plus debits minus credits)."
    if d == "month_debits":
        return f"the total of the debit column over the rows dated in {p['month']}."
    if d == "counterparty_debits":
        return f"the total of the debit column over the rows whose counterparty is {p['counterparty']}."
    if d == "largest_debit_voucher":
        return "the voucher of the row with the largest debit."
    return f"the voucher of the row with the {_ORDINALS[p['n']]} largest debit (the largest is the 1st)."


_FORMS = ("Write money as plain digits with two decimals, without currency sign or thousands separators "
          "(like 1234.50); write a voucher as its id, V- followed by digits.")


def step1_prompt(case: Case) -> str:
    t = table_for(case)
    lines = [f"# Accounts-receivable ledger {t.ledger_id}", "",
             f"Customer: {t.account}", f"Opening balance: {pretty(t.opening_cents)}", "",
             "| date | voucher | counterparty | debit | credit | balance |",
             "|---|---|---|---:|---:|---:|"]
    for r in t.rows:
        debit = pretty(r.debit_cents) if r.debit_cents else ""
        credit = pretty(r.credit_cents) if r.credit_cents else ""
        lines.append(f"| {r.date} | {r.voucher} | {r.counterparty} | {debit} | {credit} | {pretty(r.balance_cents)} |")
    lines += ["", f"Derivation: {_in_words(case)}", "",
              "Work out this value and remember it: a later session, which will not have this ledger, will ask "
              "you for it by its name.",
              f"Remember it as: `{key(case)} = <value>`", _FORMS, ""]
    return "\n".join(lines)


def step2_prompt(case: Case) -> str:
    t = table_for(case)
    return "\n".join([
        f"In an earlier session you were shown accounts-receivable ledger {t.ledger_id} (customer {t.account}) "
        f"and asked to remember `{key(case)}`. What is it?",
        "The ledger is not available in this session; answer from what you remembered.",
        _FORMS,
        "The last non-empty line of your answer must be the value alone, or UNKNOWN if you do not know it.", ""])


# --- guards ------------------------------------------------------------------------------------------

_ANSWERISH = {"answer", "gold", "expected", "value", "solution", "target"}


def best_fixed_guess_rate(cases: list[Case]) -> float:
    """The best score one fixed answer string gets over `cases` (the most common answer's share)."""
    if not cases:
        return 0.0
    return max(Counter(answer(c) for c in cases).values()) / len(cases)


def build_guards(cases: list[Case]) -> list[str]:
    """Violations of the suite's build rules; empty when the case list is fit to ship."""
    out: list[str] = []
    for cls in {type(c) for c in cases}:
        names = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set(vars(cls))
        if leaked := sorted(names & _ANSWERISH):
            out.append(f"{cls.__name__} has answer-like fields {leaked}: the case list must not carry answers")
    dup = [s for s, k in Counter(c.seed for c in cases).items() if k > 1]
    if dup:
        out.append(f"duplicate seeds: {sorted(dup)[:5]}")
    bases: list[str] = []
    for c in cases:
        gold = answer(c)
        forms = {gold}
        if not _VOUCHER_RE.match(gold):
            forms.add(pretty(int(gold.replace(".", ""))))
            if len(gold.split(".")[0]) < 4:
                out.append(f"{c.id}: money answer {gold} has fewer than 4 integer digits")
        if any(f in step2_prompt(c) for f in forms):
            out.append(f"{c.id}: the answer appears in the step-2 prompt")
        if any(f in key(c) for f in forms):
            out.append(f"{c.id}: the answer appears in its key")
        bases.append(table_for(c).rows[0].voucher)
    if len(cases) >= 2 and len(set(bases)) == 1:
        out.append(f"every table numbers its vouchers from {bases[0]}: voucher answers are guessable")
    if len(cases) >= 100 and (rate := best_fixed_guess_rate(cases)) >= 0.02:
        out.append(f"a fixed guess scores {rate:.3f} (must be < 0.02)")
    return out
