"""The protocol seam without an engine: the registry, grid specs of each protocol, the agents and arms a
protocol refuses by name, and the command line's one-line errors."""

import os
import subprocess
from pathlib import Path

import pytest

from runner.errors import SpecError
from runner.exec.job import check_agents
from runner.plan.spec import grid_from_dict, load_all_arms, load_all_tasks
from runner.protocols.registry import PROTOCOLS, protocol_named

REPO = Path(__file__).resolve().parent.parent
WHERE = Path("(test grid)")
DERIVATIONS = ["closing_balance", "month_debits", "counterparty_debits", "largest_debit_voucher", "nth_largest_debit_voucher"]


def two_session(**changes) -> dict:
    return {"name": "ts", "protocol": "two-session", "cases": 5, "arms": ["bare", "notes"], "agents": ["reader"],
            "seeds": 1, "conditions": DERIVATIONS, **changes}


def test_the_registry_holds_the_protocols_and_refuses_others_by_name():
    assert set(PROTOCOLS) == {"coding", "two-session", "planted", "personal"}
    with pytest.raises(SpecError) as e:
        protocol_named("episodic")
    assert "use one of: coding, two-session, planted, personal" in str(e.value)


def test_each_protocol_validates_its_own_conditions():
    grid_from_dict(two_session(), WHERE)
    with pytest.raises(SpecError) as e:
        grid_from_dict(two_session(conditions=["present"]), WHERE)
    assert "conditions" in e.value.field and "closing_balance" in e.value.fix
    with pytest.raises(SpecError) as e:  # a coding grid neither takes derivations nor a case count
        grid_from_dict({"name": "c", "tasks": "all", "arms": ["bare"], "agents": ["reader"], "seeds": 1,
                        "conditions": ["closing_balance"]}, WHERE)
    assert "absent" in e.value.fix
    with pytest.raises(SpecError):
        grid_from_dict(two_session(cases=0), WHERE)


def test_a_coding_grid_locks_as_it_did_before_protocols_had_names():
    grid = grid_from_dict({"name": "c", "tasks": "all", "arms": ["bare"], "agents": ["reader"], "seeds": 1,
                           "conditions": ["present"]}, WHERE)
    assert grid.protocol == "coding" and set(grid.as_dict()) == {"name", "tasks", "arms", "agents", "seeds",
                                                                 "conditions", "network"}


@pytest.mark.parametrize("changes,field,words", [
    ({"agents": ["reader", "nobody"]}, "agents", "unknown agent 'nobody'"),
    ({"agents": ["floor"]}, "agents", "plays only the coding protocol"),
    ({"arms": ["claude_md"]}, "arms", "cannot host two sessions"),
    ({"arms": ["fs_grep"]}, "arms", "cannot host two sessions"),
    ({"agents": ["stub"], "command_agents": {"stub": {"command": ["python3", "x.py"], "files": ["no/such/x.py"]}}},
     "command_agents.stub.files[0]", "does not exist"),
])
def test_what_a_protocol_cannot_use_is_refused_by_name(changes, field, words):
    grid = grid_from_dict(two_session(**changes), WHERE)
    with pytest.raises(SpecError) as e:
        check_agents(grid, WHERE, REPO, load_all_arms(REPO))
    assert e.value.field == field and words in e.value.problem


def test_the_two_session_preset_expands_to_cases_times_arms_times_agents():
    from runner.env.images import ImageRef, ImageSet
    from runner.exec.run import plan_run
    from runner.plan.spec import load_grid, preset_path

    grid = load_grid(preset_path("two-session"))
    protocol, command_agents = check_agents(grid, WHERE, REPO, load_all_arms(REPO))
    ref = ImageRef("x", "x:1", "sha256:0")
    plan = plan_run(grid, WHERE, load_all_tasks(REPO), load_all_arms(REPO), ImageSet(ref, ref, ref), Path("/tmp"),
                    "plan-only", {}, {}, command_agents)
    assert len(plan.cells) == grid.cases * len(grid.arms) * len(grid.agents) >= 40 * 2 * 7
    assert {c.condition for c in plan.cells} == set(DERIVATIONS) and len({c.cell_id for c in plan.cells}) == len(plan.cells)
    assert set(plan.inputs.tasks) == {f"ts-{i:04d}" for i in range(grid.cases)}


def planted(**changes) -> dict:
    return {"name": "pl", "protocol": "planted", "tasks": "all", "arms": ["recall"], "agents": ["reader"], "seeds": 1,
            "conditions": ["off", "on", "ablate:lexical", "ablate:all"], **changes}


@pytest.mark.parametrize("changes,field,words", [
    ({"arms": ["bare"]}, "arms", "has no planted write API"),
    ({"arms": ["notes"]}, "arms", "has no planted write API"),
    ({"conditions": ["on", "ablate:semantic"]}, "conditions", "has no lane 'semantic'"),
    ({"tasks": ["pl_no_such_task"]}, "tasks", "not a planted task"),
    ({"tasks": ["slug_ids"]}, "tasks", "not a planted task"),  # a coding task is not a planted one
    ({"agents": ["ceiling"]}, "agents", "plays only the coding protocol"),
])
def test_what_the_planted_protocol_cannot_use_is_refused_by_name(changes, field, words):
    from runner.plan.grid import check_names

    grid = grid_from_dict(planted(**changes), WHERE)
    with pytest.raises(SpecError) as e:
        check_names(grid, protocol_named(grid.protocol), WHERE, load_all_tasks(REPO), load_all_arms(REPO))
        check_agents(grid, WHERE, REPO, load_all_arms(REPO))
    assert e.value.field == field and words in e.value.problem, (e.value.field, e.value.problem)


def test_planted_conditions_are_the_arms_switches():
    grid_from_dict(planted(), WHERE)
    with pytest.raises(SpecError) as e:
        grid_from_dict(planted(conditions=["present"]), WHERE)
    assert "conditions" in e.value.field and "ablate:" in e.value.fix


def test_the_planted_preset_expands_to_tasks_times_conditions_times_arms():
    from runner.env.images import ImageRef, ImageSet
    from runner.exec.run import plan_run
    from runner.plan.spec import load_grid, preset_path

    grid = load_grid(preset_path("planted"))
    protocol, command_agents = check_agents(grid, WHERE, REPO, load_all_arms(REPO))
    ref = ImageRef("x", "x:1", "sha256:0")
    plan = plan_run(grid, WHERE, load_all_tasks(REPO), load_all_arms(REPO), ImageSet(ref, ref, ref), Path("/tmp"),
                    "plan-only", {}, {}, command_agents)
    tasks = PROTOCOLS["planted"].tasks(REPO)
    assert len(tasks) >= 15 and set(plan.inputs.tasks) == set(tasks)
    assert len(plan.cells) == len(tasks) * len(grid.conditions) * len(grid.arms) * len(grid.agents)
    assert set(grid.arms) == {"recall", "recall_fallback"} and len({c.cell_id for c in plan.cells}) == len(plan.cells)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / ".venv/bin/memgrid"), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MEMGRID_ROOT": str(REPO)})


def test_protocol_list_and_a_mismatched_protocol_on_the_command_line():
    listed = run_cli("protocol", "list")
    assert listed.returncode == 0 and "coding (default)" in listed.stdout and "two-session" in listed.stdout
    wrong = run_cli("grid", "--protocol", "two-session", "--spec", str(REPO / "runner/defaults/default.yaml"))
    assert wrong.returncode == 2 and len(wrong.stderr.strip().splitlines()) == 1, wrong.stderr
    assert "its protocol is coding, not two-session" in wrong.stderr and "Traceback" not in wrong.stderr
    unknown = run_cli("grid", "--protocol", "episodic")
    assert unknown.returncode == 2 and "'episodic' is not a protocol" in unknown.stderr


def test_the_planted_split_enters_every_units_digest():
    """A task moved between visible and holdout is another unit: its cells get new ids."""
    from runner.protocols.planted.tasks import task_digest
    from runner.units.planted import load_split

    planted_tasks = PROTOCOLS["planted"].tasks(REPO)
    split, sha = load_split(REPO, planted_tasks)
    assert set(split.values()) == {"visible", "holdout"} and len(sha) == 64
    task = planted_tasks[sorted(planted_tasks)[0]]
    assert task_digest(task, sha) != task_digest(task, "0" * 64)


def test_the_progress_line_counts_what_each_protocol_scores():
    from runner.exec.run import _counts_text

    counts = {"admitted": 4, "passed": 3, "errors": 1}
    assert _counts_text(counts, protocol_named("coding").passed_label) == "admitted 4 · passed 3 · errors 1"
    assert _counts_text(counts, protocol_named("two-session").passed_label) == "admitted 4 · recalled 3 · errors 1"
    assert _counts_text(counts, protocol_named("personal").passed_label) == "admitted 4 · errors 1"  # judged per question


def test_the_products_preset_is_the_default_grid_with_the_third_party_products_added():
    from runner.env.images import ImageRef, ImageSet
    from runner.exec.run import plan_run
    from runner.plan.spec import load_grid, preset_path

    default, products = load_grid(preset_path("default")), load_grid(preset_path("products"))
    arms = load_all_arms(REPO)
    added = [a for a in products.arms if a not in default.arms]
    assert added and all((REPO / "arms" / a / "VENDOR.md").is_file() for a in added)  # products, each with its notes
    assert (products.tasks, products.agents, products.seeds, products.conditions) == \
           (default.tasks, default.agents, default.seeds, default.conditions) and set(default.arms) < set(products.arms)
    protocol, command_agents = check_agents(products, WHERE, REPO, arms)
    ref = ImageRef("x", "x:1", "sha256:0")
    corpora = {(c, s): "0" * 64 for c in products.conditions for s in range(products.seeds)}
    plan = plan_run(products, WHERE, load_all_tasks(REPO), arms, ImageSet(ref, ref, ref), Path("/tmp"),
                    "plan-only", corpora, {}, command_agents)
    assert {c.arm for c in plan.cells} == set(products.arms) and len(plan.cells) % len(products.arms) == 0


@pytest.mark.parametrize("agent,refused", [("reader", False), ("echo", True), ("ceiling", True)])
def test_an_arm_with_hooks_is_refused_with_an_agent_that_does_not_run_them(tmp_path, agent, refused):
    """Only memgrid's reader runs an arm's hooks; under any other agent the gate's hooks_fired proof fails for every
    cell, a discard no agent caused and every cell of the pair: the grid is refused by name instead."""
    import shutil

    import yaml

    shutil.copytree(REPO / "arms" / "bare", tmp_path / "arms" / "hooked")
    spec = yaml.safe_load((tmp_path / "arms" / "hooked" / "arm.yaml").read_text())
    spec.update(name="hooked", hooks=[{"event": "session_start", "command": ["echo", "memory loaded"]}])
    (tmp_path / "arms" / "hooked" / "arm.yaml").write_text(yaml.safe_dump(spec))
    (tmp_path / "echo.py").write_text("print('hi')\n")
    grid = grid_from_dict({"name": "c", "tasks": "all", "arms": ["hooked"], "agents": [agent], "seeds": 1,
                           "conditions": ["present"],
                           "command_agents": {"echo": {"command": ["python3", "echo.py"], "files": ["echo.py"]}}}, WHERE)
    arms = load_all_arms(tmp_path)
    if not refused:
        check_agents(grid, WHERE, tmp_path, arms)
        return
    with pytest.raises(SpecError) as e:
        check_agents(grid, WHERE, tmp_path, arms)
    assert e.value.field == "agents" and e.value.problem == (f"names '{agent}', which does not run arm 'hooked''s "
                                                             "hooks: each of its cells would be discarded hook_not_fired")



@pytest.mark.parametrize("protocol,agent,arm,refused", [
    ("coding", "reader", "recall", False), ("coding", "claude-code", "recall", False),
    ("coding", "echo", "recall", True), ("coding", "floor", "recall", True),
    ("coding", "echo", "recall_prefetch", False),  # the harness searches a prefetch arm's server, not the agent
    ("two-session", "unknown", "recall", True), ("two-session", "unknown", "notes", False),
    ("planted", "echo", "recall", True),
])
def test_an_arm_with_a_server_is_refused_with_an_agent_that_cannot_connect_to_it(protocol, agent, arm, refused):
    """The gate's mcp_connected proof needs the session's own record of the arm's server connecting: an agent that is
    no MCP client (a command agent, a reference agent) cannot earn it, so every cell of the pair would be discarded
    mcp_server_failed, whatever the agent did. The grid is refused by name instead (issue 73); the personal protocol,
    whose harness searches the server, is not concerned."""
    agents = {"echo": {"command": ["python3", "-c", "print('nothing')"]}}
    spec = {"name": "c", "tasks": "all", "arms": [arm], "agents": [agent], "seeds": 1, "protocol": protocol,
            "conditions": {"coding": ["present"], "two-session": ["closing_balance"], "planted": ["on"]}[protocol],
            "command_agents": {**agents, **({"unknown": agents["echo"]} if protocol == "two-session" else {})}}
    if protocol == "two-session":
        spec["cases"] = 1
    grid = grid_from_dict(spec, WHERE)
    arms = load_all_arms(REPO)
    if not refused:
        check_agents(grid, WHERE, REPO, arms)
        return
    with pytest.raises(SpecError) as e:
        check_agents(grid, WHERE, REPO, arms)
    assert e.value.field == "agents" and e.value.problem == (f"names '{agent}', which cannot connect to arm '{arm}''s "
                                                             "MCP server: each of its cells would be discarded "
                                                             "mcp_server_failed")
    assert "MCP client (reader, claude-code, codex)" in e.value.fix
