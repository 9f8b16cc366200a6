"""The planted protocol's arithmetic without an engine: the Memory Utility Index v2 as the spec defines it,
injection confirmation from an arm's log, the condition switches, and the canary flag."""

import json
from datetime import datetime, timedelta, timezone

import pytest

from runner.plan.spec import PlantApi
from runner.protocols.planted.analysis import mui, summarise
from runner.protocols.planted.protocol import injection, server_env

API = PlantApi(("p",), ("f",), ("c",), {"NS": "{namespace}", "LOG": "{log}"}, {"OFF": "1"}, ("lexical", "recency"), "DISABLE")


def row(task, condition, passed, *, seed=0, confirmed=True, tokens=None, arm="recall", agent="reader", admitted=True,
        forgotten=True, around=None, split="visible", cache_read=None):
    injection = {"confirmed": confirmed, "read_around_the_arm": around}
    return {"task": task, "seed": seed, "condition": condition, "checker_passed": passed, "admitted": admitted,
            "arm": arm, "agent": agent, "tokens_fresh_input": tokens, "tokens_output": None,
            "tokens_cache_read": cache_read,
            "result": json.dumps({"injection": injection, "forgotten": {"ok": forgotten}, "echo": False, "split": split})}


def test_lift_when_a_paired_off_run_failed():
    assert mui([row("a", "on", True)], [row("a", "off", False)])["lift_credits"] == 1


def test_cost_saving_only_when_every_paired_off_run_passed_and_one_used_1_5x():
    on = [row("a", "on", True, tokens=1000)]
    assert mui(on, [row("a", "off", True, tokens=1500)])["cost_credits"] == 1
    assert mui(on, [row("a", "off", True, tokens=1499)])["cost_credits"] == 0
    # SMRITI's count: fresh input + output; cache reads are not tokens it weighs
    assert mui(on, [row("a", "off", True, tokens=1000, cache_read=90_000)])["cost_credits"] == 0
    # unobserved is not zero: no cost credit from tokens nobody counted (SMRITI's scorer would read 0 >= 0)
    assert mui([row("a", "on", True)], [row("a", "off", True)])["cost_credits"] == 0


def test_lift_and_cost_are_exclusive():
    result = mui([row("a", "on", True, tokens=100)], [row("a", "off", False, tokens=900), row("a", "off", True, tokens=900)])
    assert (result["lift_credits"], result["cost_credits"]) == (1, 0)


def test_no_credit_without_confirmation_a_pass_or_pairs():
    off = [row("a", "off", False)]
    assert mui([row("a", "on", True, confirmed=False)], off)["mui"] == 0
    assert mui([row("a", "on", False)], off)["mui"] == 0
    assert mui([row("b", "on", True)], off)["mui"] == 0  # no off run of task b


def test_pairs_by_trial_falling_back_to_every_off_run_of_the_task():
    # Same task and trial: the trial-1 off run passed, so no lift (the trial-0 failure is not its pair).
    assert mui([row("a", "on", True, seed=1)], [row("a", "off", False, seed=0), row("a", "off", True, seed=1)])["mui"] == 0
    # Trial 2 has no off run: all off runs of the task pair with it.
    assert mui([row("a", "on", True, seed=2)], [row("a", "off", False, seed=0), row("a", "off", True, seed=1)])["mui"] == 1


def test_mui_divides_by_every_on_run_with_a_wilson_interval():
    result = mui([row("a", "on", True), row("b", "on", False)], [row("a", "off", False), row("b", "off", False)])
    assert result["mui"] == 0.5 and 0 < result["wilson_low"] < 0.5 < result["wilson_high"] < 1


def test_summary_deltas_gap_and_confirmation():
    rows = [row("a", "on", True), row("b", "on", True), row("a", "off", False), row("b", "off", False),
            row("a", "ablate:lexical", False), row("b", "ablate:lexical", True),
            row("a", "ablate:all", False), row("b", "ablate:all", False),
            row("c", "on", True, admitted=False)]  # a discarded cell is never scored
    [s] = summarise(rows)
    assert s["lane_deltas"] == {"lexical": 0.5, "all": 1.0}  # SMRITI's: on minus each ablated condition, all too
    assert s["ablate_all_minus_off"] == 0 and s["delta_sr"] == 1.0 and s["delta_tokens"] is None
    assert (s["injection_confirmed"], s["on_runs"], s["confirmation_rate"]) == (2, 2, 1.0)
    assert s["mui"]["mui"] == 1.0 and s["flags"] == []


def test_an_arm_whose_injection_is_never_confirmed_is_flagged_and_earns_nothing():
    """The silent-fallback canary: pass rates can look like anything, the flag and MUI 0 must show."""
    rows = [row(t, "on", True, confirmed=False, arm="recall_fallback") for t in "abc"]
    rows += [row(t, "off", False, arm="recall_fallback") for t in "abc"]
    [s] = summarise(rows)
    assert s["mui"]["mui"] == 0 and s["confirmation_rate"] == 0
    assert any("never confirmed" in f for f in s["flags"])


def test_planted_memories_left_behind_are_flagged():
    [s] = summarise([row("a", "on", True), row("a", "off", False, forgotten=False)])
    assert s["forgotten_all"] is False and any("left planted memories" in f for f in s["flags"])


def test_runs_that_read_the_memory_around_the_arm_are_flagged_and_kept():
    """A model that read the store with a shell is scored as it ran (the run counts in its condition's rate),
    earns the arm no credit (not confirmed) and is named in the flags."""
    around = {"tool": "Bash", "call": "toolu_0"}
    [s] = summarise([row("a", "on", True, confirmed=False, around=around), row("b", "on", True),
                     row("a", "off", False), row("b", "off", False)])
    assert s["conditions"]["on"]["admitted"] == 2 and s["mui"]["lift_credits"] == 1, s
    assert any(f.startswith("1 runs read a planted memory around the arm") for f in s["flags"]), s["flags"]
    [clean] = summarise([row("b", "on", True), row("b", "off", False)])
    assert not any("around the arm" in f for f in clean["flags"]), clean["flags"]


NOW = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)


def log(*entries) -> str:
    return "\n".join(json.dumps(e) for e in entries) + "\nnot json\n"


def at(seconds: float) -> str:
    return (NOW + timedelta(seconds=seconds)).isoformat(timespec="milliseconds")


def test_injection_needs_a_planted_id_inside_the_window():
    planted = ["mem-1", "mem-2"]
    window = (NOW, NOW + timedelta(seconds=60))
    assert injection(log({"ts": at(5), "ids": ["s-9", "mem-2"]}), planted, *window) == {
        "confirmed": True, "planted_ids_served": ["mem-2"], "log_lines": 1, "outside_window": 0}
    before = injection(log({"ts": at(-1), "ids": ["mem-1"]}), planted, *window)
    assert not before["confirmed"] and before["outside_window"] == 1
    assert not injection(log({"ts": at(5), "ids": ["s-9"]}), planted, *window)["confirmed"]
    assert not injection("", planted, *window)["confirmed"]


@pytest.mark.parametrize("condition,expected", [
    ("on", {"NS": "memgrid-x", "LOG": "/sandbox/.arm-log/served.jsonl"}),
    ("off", {"NS": "memgrid-x", "LOG": "/sandbox/.arm-log/served.jsonl", "OFF": "1"}),
    ("ablate:recency", {"NS": "memgrid-x", "LOG": "/sandbox/.arm-log/served.jsonl", "DISABLE": "recency"}),
    ("ablate:all", {"NS": "memgrid-x", "LOG": "/sandbox/.arm-log/served.jsonl", "DISABLE": "lexical,recency"}),
])
def test_each_condition_sets_the_arms_own_switches(condition, expected):
    assert server_env(API, condition, "memgrid-x") == expected


def test_every_figure_is_also_given_per_split_as_smritis_scorer_does():
    rows = [row("a", "on", True, tokens=100), row("a", "off", False, tokens=300),
            row("h", "on", False, tokens=50, split="holdout"), row("h", "off", False, tokens=70, split="holdout")]
    [s] = summarise(rows)
    visible, holdout = s["splits"]["visible"], s["splits"]["holdout"]
    assert (visible["mui"]["mui"], visible["delta_sr"], visible["delta_tokens"]) == (1.0, 1.0, -200)
    assert (holdout["mui"]["mui"], holdout["delta_sr"], holdout["delta_tokens"]) == (0.0, 0.0, -20)
    assert s["mui"]["mui"] == 0.5 and s["delta_tokens"] == -110
    from runner.protocols.planted.analysis import split_table

    _, lines = split_table([s])
    assert [l[2:5] for l in lines] == [["holdout", "off", "0/1"], ["holdout", "on", "0/1"],
                                       ["visible", "off", "0/1"], ["visible", "on", "1/1"]]
    assert lines[3][6:9] == ["1.00 (1 + 0)", "+1.00", "-200"]


def test_the_pass_rate_plot_draws_a_rate_whose_wilson_bound_is_a_rounding_error_past_it():
    """0 of 18 has a Wilson low of 1.4e-17 (statsmodels): the plot's error bar must not go negative (it raised)."""
    from runner.protocols.planted.report import pass_rate_plot

    rows = [row(f"t{i}", "off", False, seed=i) for i in range(18)] + [row(f"t{i}", "on", True, seed=i) for i in range(18)]
    assert pass_rate_plot(summarise(rows)).startswith(b"\x89PNG")
