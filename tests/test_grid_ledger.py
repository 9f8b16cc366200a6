"""Cell identity and order; the ledger's crash safety and parquet schema."""

import json
from dataclasses import replace

import pyarrow.parquet as pq
import pytest

from runner.plan.grid import GridInputs, arm_order, expand
from runner.results.ledger import Ledger, LedgerRow, finished_cells
from runner.plan.spec import GridSpec, load_all_tasks

THREE = ("cli_exit_codes", "slug_ids", "utc_event_log")
INPUTS = GridInputs(tasks={t: f"digest-{t}" for t in THREE},
                    arms={"a": "x", "b": "y", "c": "z"}, images={"sandbox": "s", "checker": "k"}, corpora={})
GRID = GridSpec(name="g", tasks=THREE, arms=("a", "b", "c"), agents=("floor", "ceiling"), seeds=3,
                conditions=("present", "absent"))


@pytest.fixture
def tasks(project):
    return {t: spec for t, spec in load_all_tasks(project).items() if t in THREE}


def test_expansion_counts_and_unique_ids(tasks):
    cells = expand(GRID, sorted(tasks), tasks, INPUTS)
    assert len(cells) == 3 * 3 * 2 * 2 * 3
    assert len({c.cell_id for c in cells}) == len(cells)
    assert [c.order_index for c in cells] == list(range(len(cells)))


def test_ids_are_stable_and_follow_the_digests(tasks):
    ids = [c.cell_id for c in expand(GRID, sorted(tasks), tasks, INPUTS)]
    assert ids == [c.cell_id for c in expand(GRID, sorted(tasks), tasks, INPUTS)]
    changed = replace(INPUTS, tasks={**INPUTS.tasks, "slug_ids": "edited"})
    moved = {c.cell_id for c in expand(GRID, sorted(tasks), tasks, changed)}
    kept = {c.cell_id for c in expand(GRID, sorted(tasks), tasks, INPUTS) if c.task != "slug_ids"}
    assert kept <= moved and len(set(ids) - moved) == 3 * 3 * 2 * 2


def test_arms_of_a_group_run_together_in_the_seeds_order(tasks):
    cells = expand(GRID, sorted(tasks), tasks, INPUTS)
    for start in range(0, len(cells), 3):
        group = cells[start:start + 3]
        assert len({(c.task, c.seed, c.condition, c.agent) for c in group}) == 1
        assert [c.arm for c in group] == arm_order(GRID.arms, group[0].seed)
    assert len({tuple(arm_order(GRID.arms, s)) for s in range(10)}) > 1, "the arm order never changes with the seed"


def test_unsupported_condition_is_skipped(tasks, project):
    narrowed = {**tasks, "slug_ids": replace(tasks["slug_ids"], conditions=("present",))}
    cells = expand(GRID, sorted(tasks), narrowed, INPUTS)
    assert not [c for c in cells if c.task == "slug_ids" and c.condition == "absent"]


def row(cell_id: str, **kw) -> LedgerRow:
    base = dict(run_id="r", cell_id=cell_id, attempt=1, final=True, task="t", arm="a", seed=0, condition="present",
                agent="floor", order_index=0, model=None, sandbox_image="s", checker_image="k", bundle_digest="d",
                store_digest=None, started_at="x", ended_at="y", wall_seconds=1.0, admitted=True,
                discard_reason=None, gate_proofs="[]", checker_passed=True, checker_exit_code=0, checker_detail="ok",
                checker_seconds=0.1, outcome="solved", damage_fired="[]", tokens_fresh_input=None, tokens_cache_read=None,
                tokens_cache_creation=None, tokens_output=None, cost_usd=None, cli_cost_usd=None, timings=None,
                error_class=None, error_detail=None)
    return LedgerRow(**{**base, **kw})


def test_torn_last_line_is_cut_and_its_cell_reruns(tmp_path):
    ledger = Ledger(tmp_path)
    ledger.open()
    ledger.append(row("c1"))
    ledger.append(row("c2"))
    with open(ledger.journal, "a") as f:
        f.write(json.dumps({"cell_id": "c3"})[:15])  # what a kill -9 mid-write leaves
    assert [r["cell_id"] for r in ledger.rows()] == ["c1", "c2"]
    assert ledger.open() > 0
    ledger.append(row("c3"))
    assert [r["cell_id"] for r in ledger.rows()] == ["c1", "c2", "c3"]


def test_harness_errors_are_not_finished(tmp_path):
    rows = [row("c1"), row("c2", final=False, admitted=False, discard_reason="harness_error")]
    assert finished_cells([r.__dict__ for r in rows]) == {"c1"}


def test_parquet_keeps_none_as_null(tmp_path):
    ledger = Ledger(tmp_path)
    ledger.open()
    ledger.append(row("c1"))
    ledger.append(row("c2", checker_passed=None, admitted=False, discard_reason="bundle_digest_mismatch",
                      tokens_output=None))
    table = pq.read_table(ledger.compact())
    assert table.num_rows == 2
    assert table.column("checker_passed").to_pylist() == [True, None]
    assert table.column("tokens_output").null_count == 2
    assert str(table.schema.field("tokens_output").type) == "int64"
