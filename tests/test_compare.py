"""`memgrid compare`: two synthetic runs of one grid, v1 of an arm in run A (recall) and v2 in run B (recall_v2).

recall against recall_v2 for agent reader under present, by (task, seed), pass A / pass B:

    task_0: 1/1, 1/0    task_1: 1/1, 0/1    task_2: 0/1, 0/1    task_3: 0/0 (B damaged), 0/discarded in B

Per-protocol (both cells admitted): 7 pairs, both 2, A only 1, B only 3, neither 1: delta (3 - 1) / 7, exact
McNemar 2 * P(X <= 1 | n=4, 1/2) = 10/16. Intention-to-treat (8 pairs, the discard a failure): (5 - 3) / 8.
task_4 seed 0 finished in run A only (run B's attempt is a harness failure, not final): one unpaired cell.
claude_md ran unchanged in both runs.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from synthetic_ledger import cell, write_run
from typer.testing import CliRunner

from runner.cli import app
from runner.errors import UserError
from runner.results.compare import ArmPair, compare_runs

REPO = Path(__file__).resolve().parent.parent
PASSES = {  # (task, seed) -> (A passed, B passed); None: discarded
    ("task_0", 0): (True, True), ("task_0", 1): (True, False), ("task_1", 0): (True, True), ("task_1", 1): (False, True),
    ("task_2", 0): (False, True), ("task_2", 1): (False, True), ("task_3", 0): (False, False), ("task_3", 1): (False, None)}
TASKS = [f"task_{t}" for t in range(5)]


def grid(arms: list[str]) -> dict:
    return {"name": "synthetic", "agents": ["reader"], "arms": arms, "conditions": ["present"], "tasks": TASKS,
            "seeds": 2, "network": "none"}


def edit_lock(run_dir: Path, change) -> None:
    lock = json.loads((run_dir / "run.json").read_text())
    change(lock)
    (run_dir / "run.json").write_text(json.dumps(lock))


@pytest.fixture
def runs(tmp_path) -> Path:
    """runs/v1 (claude_md, recall) and runs/v2 (claude_md, recall_v2), recall_v2 with a digest of its own."""
    rows_a, rows_b = [], []
    for (task, seed), (a, b) in PASSES.items():
        rows_a.append(cell(task, "recall", a, seed=seed))
        rows_b.append(cell(task, "recall_v2", b, seed=seed, admitted=b is not None,
                           **({"outcome": "damaged"} if task == "task_3" and b is False else {})))
        for rows in (rows_a, rows_b):
            rows.append(cell(task, "claude_md", task == "task_0", seed=seed))
    rows_a.append(cell("task_4", "recall", True))
    rows_b.append(cell("task_4", "recall_v2", None, admitted=False, final=False))
    write_run(tmp_path / "runs" / "v1", rows_a, grid(["claude_md", "recall"]))
    write_run(tmp_path / "runs" / "v2", rows_b, grid(["claude_md", "recall_v2"]))
    edit_lock(tmp_path / "runs" / "v2", lambda lock: lock["inputs"]["arms"].update(recall_v2="7" * 64))
    return tmp_path / "runs"


def recall_group(runs: Path, **options):
    comparison = compare_runs("v1", "v2", runs, arm="recall:recall_v2", **options)
    [group] = comparison.groups
    return comparison, group


def test_paired_delta_mcnemar_and_rates_equal_the_hand_computed_ones(runs):
    comparison, g = recall_group(runs)
    assert (g.agent, g.condition, g.arms) == ("reader", "present", ArmPair("recall", "recall_v2"))
    assert (g.pp.pairs, g.pp.tasks, g.pp.both, g.pp.base_only, g.pp.arm_only, g.pp.neither) == (7, 4, 2, 1, 3, 1)
    assert g.pp.delta == pytest.approx(2 / 7) and g.pp.p_mcnemar == pytest.approx(10 / 16)
    assert (g.itt.pairs, g.itt.delta) == (8, pytest.approx(2 / 8))
    assert (g.pass_a.passed, g.pass_a.n, g.pass_b.passed, g.pass_b.n) == (3, 7, 5, 7)
    assert (g.damage_a.passed, g.damage_b.passed, g.damage_b.n) == (0, 1, 7)
    assert (g.only_a, g.only_b) == (1, 0) and (comparison.unpaired_a, comparison.unpaired_b) == (1, 0)
    assert comparison.drift == []


def test_the_bootstrap_interval_brackets_the_delta_and_is_reproducible(runs):
    _, first = recall_group(runs)
    _, again = recall_group(runs)
    _, other_seed = recall_group(runs, seed=7)
    assert first.pp.low <= first.pp.delta <= first.pp.high and first.pp.low < first.pp.high
    assert (first.pp.low, first.pp.high) == (again.pp.low, again.pp.high)
    assert other_seed.pp.delta == first.pp.delta


def test_renamed_arms_pair_only_when_named(runs):
    unnamed = compare_runs("v1", "v2", runs)
    assert unnamed.arms == [ArmPair("claude_md", "claude_md")]  # the only name in both runs
    assert [g.pp.delta for g in unnamed.groups] == [0.0]
    comparison, _ = recall_group(runs)
    assert comparison.arms == [ArmPair("recall", "recall_v2")]
    assert "expected to differ" in comparison.arm_digests[0]
    assert "the same in both runs" in compare_runs("v1", "v2", runs, arm="claude_md").arm_digests[0]


@pytest.mark.parametrize("arm, says", [("recall", "run v2 has no finished cell of arm 'recall'"),
                                       ("memo:recall_v2", "run v1 has no finished cell of arm 'memo'"),
                                       ("recall:", "not an arm name or A:B")])
def test_an_unknown_arm_is_one_line_naming_it(runs, arm, says):
    with pytest.raises(UserError, match=says) as error:
        compare_runs("v1", "v2", runs, arm=arm)
    assert "\n" not in str(error.value) and ": fix: " in str(error.value)


def test_a_missing_run_and_runs_with_no_common_cell_are_refused(runs, tmp_path):
    with pytest.raises(UserError, match="no run.json"):
        compare_runs("v1", "v3", runs)
    other = write_run(runs / "other", [cell("task_9", "recall_v2", True, seed=5)], grid(["recall_v2"]))
    with pytest.raises(UserError, match=r"no cell of recall -> recall_v2 pairs across them"):
        compare_runs("v1", str(other), runs, arm="recall:recall_v2")


def test_a_drifted_task_digest_refuses_with_one_line_and_exit_2(runs):
    edit_lock(runs / "v2", lambda lock: lock["inputs"]["tasks"].update(task_1="0" * 64))
    proc = subprocess.run([sys.executable, "-c", "from runner.cli import main; main()", "compare", "v1", "v2", "--arm",
                           "recall:recall_v2", "--runs-dir", str(runs)], capture_output=True, text=True, cwd=REPO,
                          timeout=120)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "task 'task_1' digest dddddddddddddddddd" in proc.stderr and "--allow-drift" in proc.stderr


def test_allow_drift_names_every_drifted_thing_at_the_top(runs):
    def drift(lock):
        lock["inputs"]["tasks"]["task_1"] = "0" * 64
        lock["inputs"]["images"]["checker"] = "sha256:" + "1" * 64
        lock["grid"]["seeds"] = 3

    edit_lock(runs / "v2", drift)
    result = CliRunner().invoke(app, ["compare", "v1", "v2", "--arm", "recall:recall_v2", "--runs-dir", str(runs),
                                      "--allow-drift"])
    assert result.exit_code == 0, result.output
    top = result.output.splitlines()[:3]
    assert top == ["drift allowed: grid seeds: 2 in run A, 3 in run B",
                   "drift allowed: task 'task_1' digest ddddddddddddddddddd in run A, 0000000000000000000 in run B",
                   "drift allowed: image 'checker' digest absent in run A, sha256:111111111111 in run B"]


def test_the_terminal_table_shows_the_pair_and_the_unpaired_count(runs):
    result = CliRunner().invoke(app, ["compare", "v1", "v2", "--arm", "recall:recall_v2", "--runs-dir", str(runs)])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if line.lstrip().startswith("reader"))
    columns = row.split()  # the interval's two bounds split in two: columns 5 and 6
    assert columns[:5] == ["reader", "present", "7", "0.43/0.71", "+0.29"] and columns[7:9] == ["0.625", "1/3"]
    assert "unpaired cells: 1 of run A and 0 of run B" in result.output


def test_the_html_page_and_json_hold_the_table(runs, tmp_path):
    page, record = tmp_path / "out" / "compare.html", tmp_path / "compare.json"
    result = CliRunner().invoke(app, ["compare", "v1", "v2", "--arm", "recall:recall_v2", "--runs-dir", str(runs),
                                      "--html", str(page), "--json", str(record)])
    assert result.exit_code == 0, result.output
    html = page.read_text()
    table = html[html.index('<table id="compare">'):html.index("</table>")]
    assert "<td>recall -&gt; recall_v2</td>" in table and "0.43 [" in table and "(3/7)" in table and "(5/7)" in table
    assert "<td>0.625</td>" in table and '<p id="drift">none' in html
    assert "src=" not in html and "href=" not in html and "<link" not in html
    data = json.loads(record.read_text())
    assert (data["groups"][0]["pp"]["arm_only"], data["groups"][0]["pp"]["base_only"], data["unpaired_a"]) == (3, 1, 1)
