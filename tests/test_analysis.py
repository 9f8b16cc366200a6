"""runner.results.analysis on synthetic ledgers with numbers checkable by hand."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from synthetic_ledger import cell, write_run

from runner.results.analysis import analyse, score_predictions
from runner.results.stats import paired_stat, wilson
from runner.errors import UserError

REPO = Path(__file__).resolve().parent.parent


def test_wilson_interval_matches_the_closed_form():
    r = wilson(3, 10)
    z, n, p = 1.959963984540054, 10, 0.3
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert r.rate == pytest.approx(0.3)
    assert (r.low, r.high) == pytest.approx((centre - half, centre + half), abs=1e-9)
    assert (r.low, r.high) == pytest.approx((0.1078, 0.6032), abs=1e-4)


def test_wilson_of_no_cells_is_none_with_a_reason():
    r = wilson(0, 0)
    assert (r.rate, r.low, r.high) == (None, None, None) and r.reason


def test_exact_mcnemar_p_for_a_known_table():
    # 3 both pass, 1 arm only, 6 baseline only, 2 neither: p = 2 * P(X <= 1 | Bin(7, 1/2)) = 2 * 8/128
    arm = [1] * 3 + [1] * 1 + [0] * 6 + [0] * 2
    base = [1] * 3 + [0] * 1 + [1] * 6 + [0] * 2
    tasks = [f"t{i}" for i in range(12)]
    s = paired_stat(np.array(tasks), np.array(arm), np.array(base), min_effect=0.1, resamples=2000)
    assert (s.both, s.arm_only, s.base_only, s.neither) == (3, 1, 6, 2)
    assert s.p_mcnemar == pytest.approx(0.125)
    assert s.delta == pytest.approx(-5 / 12)
    assert s.label == "negative"


def test_no_discordant_pairs_gives_no_p_and_says_why():
    s = paired_stat(np.array(["a", "b", "c"]), np.array([1, 0, 1]), np.array([1, 0, 1]), min_effect=0.1, resamples=500)
    assert s.p_mcnemar is None and "discordant" in s.reason
    assert s.delta == 0.0 and s.label == "noise"


def test_bootstrap_resamples_tasks_not_cells():
    # Task A: 10 pairs where only the arm passes; task B: 10 pairs where neither does. Resampling the two
    # tasks gives means 1, 0.5 or 0, so the 95 % interval is [0, 1]; a cell bootstrap would be near [0.3, 0.7].
    tasks = np.array(["A"] * 10 + ["B"] * 10)
    arm = np.array([1] * 10 + [0] * 10)
    s = paired_stat(tasks, arm, np.zeros(20), min_effect=0.1)
    assert s.delta == pytest.approx(0.5) and s.tasks == 2
    assert (s.low, s.high) == (0.0, 1.0)


def test_bootstrap_is_reproducible_with_its_seed():
    rng = np.random.default_rng(3)
    tasks = np.repeat([f"t{i}" for i in range(8)], 5)
    arm, base = rng.integers(0, 2, 40), rng.integers(0, 2, 40)
    first = paired_stat(tasks, arm, base, 0.1, resamples=10_000, seed=11)
    again = paired_stat(tasks, arm, base, 0.1, resamples=10_000, seed=11)
    assert (first.low, first.high) == (again.low, again.high)
    assert first.low <= first.delta <= first.high


def test_one_task_has_a_delta_but_no_interval():
    s = paired_stat(np.array(["only"] * 4), np.array([1, 1, 1, 0]), np.zeros(4), min_effect=0.1)
    assert s.delta == pytest.approx(0.75)
    assert s.low is None and s.high is None and "2" in s.reason


def test_no_pairs_is_none_with_a_reason():
    s = paired_stat(np.array([]), np.array([]), np.array([]), min_effect=0.1)
    assert s.delta is None and s.reason == "no paired cells"


def test_itt_is_below_per_protocol_when_cells_are_discarded(tmp_path):
    rows = [cell("t0", "recall", True), cell("t1", "recall", True), cell("t2", "recall", False),
            cell("t3", "recall", None, admitted=False)]
    a = analyse(write_run(tmp_path / "run", rows))
    g = a.groups[0]
    assert (g.cells, g.admitted, g.passed) == (4, 3, 2)
    assert g.itt.rate == pytest.approx(0.5) and g.pp.rate == pytest.approx(2 / 3)
    assert g.itt.rate < g.pp.rate
    assert g.discards == {"mcp_not_connected": 1}


def test_contrasts_pair_cells_and_count_a_discard_as_failure_only_under_itt(tmp_path):
    rows = []
    for i in range(6):
        rows.append(cell(f"t{i}", "claude_md", i == 5))
        rows.append(cell(f"t{i}", "recall", i < 4))
    rows.append(cell("t6", "claude_md", True))
    rows.append(cell("t6", "recall", None, admitted=False))
    a = analyse(write_run(tmp_path / "run", rows), min_effect=0.1)
    c = a.contrast("recall - claude_md", "present", "reader")
    assert c.kind == "primary"
    assert (c.pp.pairs, c.pp.arm_only, c.pp.base_only) == (6, 4, 1)
    assert c.pp.delta == pytest.approx(3 / 6)
    assert (c.itt.pairs, c.itt.base_only) == (7, 2)
    assert c.itt.delta == pytest.approx(2 / 7)
    assert c.pp.label == "positive"


def test_cells_sharing_their_coordinates_count_in_rates_but_pair_with_nothing(tmp_path):
    """selftest's canaries: one arm's cell broken several ways at the same (task, seed); none is the partner."""
    rows = [cell(f"t{i}", arm, i < 3) for i in range(4) for arm in ("claude_md", "recall")]
    rows += [cell("t0", "recall", None, admitted=False, cell_id=f"canary-{k}") for k in range(2)]
    a = analyse(write_run(tmp_path / "run", rows), min_effect=0.1)
    assert next(g for g in a.groups if g.arm == "recall").cells == 6
    c = a.contrast("recall - claude_md", "present", "reader")
    assert c.itt.pairs == 3  # t0's recall cells are three at one coordinate: t1-t3 pair


def test_small_deltas_are_labelled_noise_against_the_minimum_effect(tmp_path):
    rows = []
    for i in range(20):
        rows.append(cell(f"t{i}", "claude_md", False))
        rows.append(cell(f"t{i}", "fs_grep", i == 0))  # delta 0.05
    run = write_run(tmp_path / "run", rows)
    assert analyse(run, min_effect=0.10).contrast("fs_grep - claude_md", "present", "reader").pp.label == "noise"
    assert analyse(run, min_effect=0.05).contrast("fs_grep - claude_md", "present", "reader").pp.label == "positive"


def test_missing_arms_omit_their_contrasts_with_a_reason(tmp_path):
    rows = [cell(f"t{i}", arm, i % 2 == 0) for i in range(3) for arm in ("claude_md", "recall")]
    a = analyse(write_run(tmp_path / "run", rows))
    omitted = {o.name: o.reason for o in a.omitted}
    assert "oracle_memory - claude_md" in omitted and "oracle_memory" in omitted["oracle_memory - claude_md"]
    assert "recall_prefetch - recall" in omitted
    assert [c.name for c in a.diagnostics] == ["recall - claude_md"]

    no_baseline = analyse(write_run(tmp_path / "run2", [cell("t0", "recall", True), cell("t1", "bare", False)]))
    assert no_baseline.contrasts == []
    assert any("claude_md" in o.reason for o in no_baseline.omitted)


def test_damage_is_against_the_paired_bare_cell_and_per_condition(tmp_path):
    rows = [
        # present: t0 harmed, t1 arm discarded (not counted), t2 helped, t3 both fail
        cell("t0", "bare", True), cell("t0", "recall", False),
        cell("t1", "bare", True), cell("t1", "recall", None, admitted=False),
        cell("t2", "bare", False), cell("t2", "recall", True),
        cell("t3", "bare", False), cell("t3", "recall", False),
    ]
    for t, bare_passes in (("t0", True), ("t1", True), ("t2", False), ("t3", False)):
        rows += [cell(t, "bare", bare_passes, condition="superseded"), cell(t, "recall", False, condition="superseded")]
    a = analyse(write_run(tmp_path / "run", rows))
    harm = {h.condition: h for h in a.harm if h.arm == "recall"}
    assert set(harm) == {"present", "superseded"}
    assert (harm["present"].pairs, harm["present"].harmed, harm["present"].helped) == (3, 1, 1)
    assert harm["present"].net_harm == 0.0
    assert (harm["superseded"].pairs, harm["superseded"].harmed, harm["superseded"].helped) == (4, 2, 0)
    assert harm["superseded"].net_harm == pytest.approx(0.5)


def test_the_detector_damage_rate_counts_damaged_among_admitted_cells_even_where_bare_never_passes(tmp_path):
    rows = [cell(f"t{i}", "bare", False) for i in range(4)]
    rows += [cell("t0", "recall", False, outcome="damaged"), cell("t1", "recall", False, outcome="damaged"),
             cell("t2", "recall", False), cell("t3", "recall", None, admitted=False)]  # a discard is not in the denominator
    a = analyse(write_run(tmp_path / "run", rows))
    groups = {g.arm: g for g in a.groups}
    damage = groups["recall"].damage
    assert (damage.passed, damage.n) == (2, 3) and damage.rate == pytest.approx(2 / 3)
    assert damage.low < damage.rate < damage.high
    assert groups["bare"].damage.rate == 0.0
    assert [(h.harmed, h.pairs) for h in a.harm] == [(0, 3)]  # harm against bare cannot see it: bare never solves


def test_an_admitted_cell_the_detector_did_not_score_is_unobserved_not_undamaged(tmp_path):
    rows = [cell("t0", "recall", False, outcome=None), cell("t1", "recall", False, outcome=None)]
    a = analyse(write_run(tmp_path / "run", rows))
    damage = a.groups[0].damage
    assert damage.rate is None and damage.n == 0 and "scored" in damage.reason


def test_no_bare_arm_means_no_damage_figures(tmp_path):
    a = analyse(write_run(tmp_path / "run", [cell("t0", "claude_md", True), cell("t0", "recall", False)]))
    assert a.harm == []


def test_only_the_latest_final_attempt_counts(tmp_path):
    rows = [cell("t0", "recall", None, admitted=False, final=False, attempt=1),
            cell("t0", "recall", True, attempt=2),
            cell("t1", "recall", None, admitted=False, final=False, attempt=1)]  # in flight: reruns on resume
    a = analyse(write_run(tmp_path / "run", rows))
    g = a.groups[0]
    assert (g.cells, g.admitted, g.passed) == (1, 1, 1)


def test_tokens_unobserved_stay_none_and_usd_needs_every_cell_priced(tmp_path):
    tokens = dict(tokens_fresh_input=100, tokens_cache_read=1000, tokens_cache_creation=50, tokens_output=850)
    rows = [cell("t0", "recall", True, cost_usd=0.5, **tokens), cell("t1", "recall", False, cost_usd=0.25, **tokens),
            cell("t0", "bare", False), cell("t1", "bare", True, cost_usd=0.1)]
    a = analyse(write_run(tmp_path / "run", rows))
    costs = {c.arm: c for c in a.costs}
    recall, bare = costs["recall"], costs["bare"]
    assert recall.tokens == {"tokens_fresh_input": 200, "tokens_cache_read": 2000, "tokens_cache_creation": 100,
                             "tokens_output": 1700}
    assert recall.tokens_total == 4000 and recall.cost_usd == pytest.approx(0.75)
    assert recall.success_per_million_tokens == pytest.approx(1 / 4000 * 1e6)
    assert bare.tokens_total is None and all(v is None for v in bare.tokens.values())
    assert bare.success_per_million_tokens is None
    assert bare.cost_usd is None and "1 of 2" in bare.cost_reason
    assert a.ingest == []  # no store reports


def test_ingest_costs_come_from_store_reports(tmp_path):
    run = write_run(tmp_path / "run", [cell("t0", "recall", True)])
    for condition, tokens, size in (("present", 1200, 3 * 2**20), ("absent", 800, 2**20)):
        store = run / "stores" / "recall" / f"{condition}-seed0"
        store.mkdir(parents=True)
        # the keys runner.arms.ingest writes: the ingest receipt's model_tokens, the frozen tar's bytes
        (store / "report.json").write_text(json.dumps({"seconds": 2.5, "model_tokens": tokens, "bytes": size,
                                                       "documents": 10}))
    (ingest,) = analyse(run).ingest
    assert (ingest.arm, ingest.stores, ingest.documents, ingest.seconds, ingest.store_mib, ingest.tokens) == \
        ("recall", 2, 20, 5.0, 2.0, 2000)


def _prediction_run(tmp_path):
    rows = []
    for i in range(4):
        rows += [cell(f"t{i}", "claude_md", False), cell(f"t{i}", "recall", True), cell(f"t{i}", "placebo", False)]
        # absent: half the tasks lift, half do not: delta 0.5, interval [0, 1]
        rows += [cell(f"t{i}", "claude_md", False, condition="absent"), cell(f"t{i}", "recall", i < 2, condition="absent"),
                 cell(f"t{i}", "placebo", False, condition="absent")]
    return analyse(write_run(tmp_path / "run", rows), min_effect=0.1)


def test_predictions_are_scored_by_the_documented_rule(tmp_path):
    a = _prediction_run(tmp_path)

    def verdict(contrast, expect, condition="present"):
        p = {"id": "P", "text": "t", "contrast": contrast, "condition": condition, "agent": "reader", "expect": expect}
        return score_predictions(a, [p])[0].verdict

    assert verdict("recall - claude_md", "positive") == "confirmed"
    assert verdict("recall-claude_md", "positive") == "confirmed"  # spacing does not matter
    assert verdict("recall - claude_md", "negative") == "refuted"
    assert verdict("recall - claude_md", "null") == "refuted"
    assert verdict("placebo - claude_md", "null") == "confirmed"
    assert verdict("placebo - claude_md", "positive") == "refuted"
    assert verdict("recall - claude_md", "positive", "absent") == "inconclusive"
    assert verdict("oracle_memory - claude_md", "positive") == "inconclusive"
    assert verdict("recall - claude_md", "sideways") == "inconclusive"


def test_a_prediction_on_one_task_is_inconclusive(tmp_path):
    a = analyse(write_run(tmp_path / "run", [cell("t0", "claude_md", False), cell("t0", "recall", True)]))
    s = score_predictions(a, [{"id": "P1", "text": "t", "contrast": "recall - claude_md", "condition": "present",
                               "agent": "reader", "expect": "positive"}])[0]
    assert s.verdict == "inconclusive" and "2" in s.why


def test_missing_run_folder_and_empty_ledger_are_user_errors(tmp_path):
    with pytest.raises(UserError, match="no such run folder"):
        analyse(tmp_path / "nope")
    run = tmp_path / "empty"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "empty", "grid": {}, "inputs": {}}))
    (run / "ledger.jsonl").write_text("")
    with pytest.raises(UserError, match="ledger.jsonl: no finished cells"):
        analyse(run)


def test_report_command_on_a_missing_run_prints_one_line_and_exits_2(tmp_path):
    out = subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "report", str(tmp_path / "missing")],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "missing" in lines[0] and "fix:" in lines[0]
