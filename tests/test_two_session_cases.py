"""Two-session recall cases: deterministic, answer-free, hard to guess, and guarded."""

import dataclasses
import re

import pytest

from runner.protocols.two_session import cases as C


def test_same_base_seed_same_cases_and_answers():
    a, b = C.generate_cases(40, base_seed=7), C.generate_cases(40, base_seed=7)
    assert a == b
    assert [C.answer(c) for c in a] == [C.answer(c) for c in b]
    assert [C.step1_prompt(c) for c in a] == [C.step1_prompt(c) for c in b]
    # A fresh table draw (no cache) gives the same table.
    c = a[3]
    assert C.generate_table(c.seed, c.size, 0) == C.generate_table(c.seed, c.size, 0)
    assert {x.seed for x in C.generate_cases(40, base_seed=8)}.isdisjoint({x.seed for x in a})


def test_seeds_unique_and_no_answer_field():
    cs = C.generate_cases(200)
    assert len({c.seed for c in cs}) == 200
    assert len({c.id for c in cs}) == 200
    assert not {f.name for f in dataclasses.fields(C.Case)} & {"answer", "gold", "expected", "value"}


def test_tables_fit_the_spec():
    for c in C.generate_cases(40):
        t = C.table_for(c)
        assert 10 <= len(t.rows) <= 40 and len(t.rows) == c.size
        assert re.fullmatch(r"AR-\d[A-Z]\d[A-Z]", t.ledger_id)
        balance = t.opening_cents
        for r in t.rows:
            assert (r.debit_cents > 0) != (r.credit_cents > 0)
            balance += r.debit_cents - r.credit_cents
            assert r.balance_cents == balance >= 0
        assert [r.date for r in t.rows] == sorted(r.date for r in t.rows)
        numbers = [int(r.voucher[2:]) for r in t.rows]
        assert numbers == sorted(set(numbers))


def test_answers_have_four_integer_digits_and_stay_out_of_step2_and_key():
    for c in C.generate_cases(200):
        gold = C.answer(c)
        if c.derivation in C.MONEY_DERIVATIONS:
            assert re.fullmatch(r"\d{4,}\.\d\d", gold), (c, gold)
            assert C.pretty(int(gold.replace(".", ""))) not in C.step2_prompt(c)
        else:
            assert re.fullmatch(r"V-\d{5}", gold), (c, gold)
        assert gold not in C.step2_prompt(c)
        assert gold not in C.key(c)
        assert C.key(c) in C.step2_prompt(c)
        assert f"`{C.key(c)} = <value>`" in C.step1_prompt(c)
        assert gold not in C.step1_prompt(c).split("Remember it as:")[1]


def test_every_derivation_appears_in_40_cases():
    cs = C.generate_cases(40)
    assert {c.derivation for c in cs} == set(C.DERIVATIONS)
    for c in cs:
        if c.derivation == "nth_largest_debit_voucher":
            assert 2 <= c.params["n"] <= 4


def test_voucher_answers_are_unique_in_their_table():
    for c in C.generate_cases(200):
        if c.derivation in C.MONEY_DERIVATIONS:
            continue
        t = C.table_for(c)
        gold = C.answer(c)
        amount = next(r.debit_cents for r in t.rows if r.voucher == gold)
        assert sum(r.debit_cents == amount for r in t.rows) == 1
        bigger = {r.debit_cents for r in t.rows if r.debit_cents > amount}
        assert len(bigger) == c.params.get("n", 1) - 1


def test_step1_prompt_shows_the_table():
    c = C.generate_cases(5)[2]
    t, p = C.table_for(c), C.step1_prompt(c)
    assert "| date | voucher | counterparty | debit | credit | balance |" in p
    assert f"Opening balance: {C.pretty(t.opening_cents)}" in p
    for r in t.rows:
        assert f"| {r.date} | {r.voucher} | {r.counterparty} |" in p and C.pretty(r.balance_cents) in p
    assert "<value>" in p
    s2 = C.step2_prompt(c)
    assert "UNKNOWN" in s2 and "| date |" not in s2 and t.rows[0].voucher not in s2


def test_best_fixed_guess_rate_over_200():
    rate = C.best_fixed_guess_rate(C.generate_cases(200))
    print(f"best fixed guess over 200 tables: {rate:.3f}")
    assert rate < 0.02


def test_build_guards_pass_on_generated_cases():
    assert C.build_guards(C.generate_cases(200)) == []


def test_build_guards_catch_duplicate_seeds():
    cs = C.generate_cases(10)
    dup = cs + [dataclasses.replace(cs[0], id="ts-9999")]
    assert any("duplicate seeds" in v for v in C.build_guards(dup))


def test_build_guards_catch_a_leaking_step2_prompt(monkeypatch):
    cs = C.generate_cases(10)
    real = C.step2_prompt
    monkeypatch.setattr(C, "step2_prompt", lambda c: real(c) + f"\n(hint: {C.answer(c)})")
    violations = C.build_guards(cs)
    assert len([v for v in violations if "step-2 prompt" in v]) == 10


def test_build_guards_catch_an_answer_field_and_a_fixed_voucher_base(monkeypatch):
    @dataclasses.dataclass(frozen=True)
    class LeakyCase(C.Case):
        answer: str = ""

    cs = [LeakyCase(**dataclasses.asdict(c), answer=C.answer(c)) for c in C.generate_cases(5)]
    assert any("answer-like" in v for v in C.build_guards(cs))

    real = C.generate_table

    def fixed_base(seed, size, attempt=0):
        t = real(seed, size, attempt)
        rows = tuple(dataclasses.replace(r, voucher=f"V-{10001 + i}") for i, r in enumerate(t.rows))
        return dataclasses.replace(t, rows=rows)

    C._table.cache_clear()
    monkeypatch.setattr(C, "generate_table", fixed_base)
    try:
        assert any("numbers its vouchers from V-10001" in v for v in C.build_guards(C.generate_cases(10)))
    finally:
        monkeypatch.undo()
        C._table.cache_clear()


def test_derive_rejects_a_table_that_cannot_carry_the_case():
    c = C.Case(id="x", seed=1, derivation="month_debits", params={"month": "2031-01"}, size=10)
    with pytest.raises(ValueError):
        C.derive(c, C.generate_table(1, 10))
