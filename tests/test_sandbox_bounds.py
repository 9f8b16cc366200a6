"""Bounds an agent cannot pass, attacked from inside real cells: the disk budget, the artifact cap,
links in the workspace, and an output flood."""

import json

import psutil
import pytest
import yaml

from runner.agents import registry as agent_module
from runner.agents.base import Agent
from runner.agents.base import Transcript
from runner.env.bundle import build_bundle
from runner.plan.grid import CellSpec
from runner.env.sandbox import MIB, DiskBudget, Sandbox
from runner.plan.spec import load_all_arms, load_all_tasks
from runner.protocols.registry import PROTOCOLS
from runner.exec.trial import TrialContext, run_cell

from conftest import REPO

CODING = PROTOCOLS["coding"]


class ShellAgent(Agent):
    """A test agent that runs shell commands in the sandbox, as a hostile agent's Bash tool would."""

    name = "shell"
    commands: list[str] = []

    def run(self, sandbox, prompt):
        transcript = Transcript(agent=self.name, model=None)
        for cmd in self.commands:
            result = sandbox.exec(["sh", "-c", cmd], timeout=60)
            transcript.add("exec", cmd=cmd, exit_code=result.exit_code, stdout=result.stdout[-2000:],
                           stderr=result.stderr[-2000:])
        return transcript


@pytest.fixture
def shell(monkeypatch):
    monkeypatch.setitem(agent_module.AGENTS, "shell", ShellAgent)
    return ShellAgent


def set_limits(project, task_id: str, **limits) -> None:
    path = project / "tasks" / task_id / "task.yaml"
    data = yaml.safe_load(path.read_text())
    data.setdefault("limits", {}).update(limits)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.fixture
def ctx(engine, images, project, tmp_path, run_id):
    def make():
        return TrialContext(engine, run_id, tmp_path / "run", images, load_all_tasks(project), load_all_arms(project),
                            protocol=CODING)
    return make


def cell(task="slug_ids") -> CellSpec:
    return CellSpec(task, "bare", 0, "present", "shell", f"shell-{task}", 0)


def events(ctx, kind: str) -> list[dict]:
    path = ctx.run_dir / "cells" / "shell-slug_ids" / "transcript.jsonl"
    return [e for e in map(json.loads, path.open()) if e["type"] == kind]


def test_writes_past_the_disk_budget_fail_inside_the_sandbox(ctx, shell, project, monkeypatch, no_leftovers):
    set_limits(project, "slug_ids", disk_mib=64)
    monkeypatch.setattr(shell, "commands", [
        "dd if=/dev/zero of=/sandbox/workspace/fill bs=1M count=200",
        "dd if=/dev/zero of=/tmp/fill bs=1M count=200",
        "dd if=/dev/zero of=$HOME/fill bs=1M count=200",
        "touch /fill || touch /var/tmp/fill || touch /opt/fill",  # everywhere else is read-only
        "rm -f /tmp/fill $HOME/fill",
    ])
    c = ctx()
    row = run_cell(c, cell(), 1)
    workspace, tmp, home, rootfs, _ = events(c, "exec")
    for attempt in (workspace, tmp, home):
        assert attempt["exit_code"] != 0 and "No space left on device" in attempt["stderr"], attempt
    assert rootfs["exit_code"] != 0 and "Read-only file system" in rootfs["stderr"], rootfs
    assert row.error_class == "resource_limit" and "/sandbox" in row.error_detail, (row.error_class, row.error_detail)
    assert row.admitted and row.checker_passed is False  # the agent's doing: recorded and scored


def test_budget_below_the_write_leaves_the_cell_unflagged(ctx, shell, project, monkeypatch, no_leftovers):
    """The same writes under the default budget succeed and nothing is flagged: the flag above is the budget's."""
    monkeypatch.setattr(shell, "commands", ["dd if=/dev/zero of=/sandbox/workspace/fill bs=1M count=100 && rm /sandbox/workspace/fill"])
    c = ctx()
    row = run_cell(c, cell(), 1)
    assert events(c, "exec")[0]["exit_code"] == 0
    assert row.error_class is None


def test_a_workspace_over_the_artifact_cap_is_not_graded(ctx, shell, project, monkeypatch, no_leftovers):
    set_limits(project, "slug_ids", artifact_mib=1)
    monkeypatch.setattr(shell, "commands", ["head -c 5000000 /dev/urandom > /sandbox/workspace/blob.bin"])
    c = ctx()
    row = run_cell(c, cell(), 1)
    assert row.admitted and row.outcome == "neutral_failure" and row.error_class == "artifact_too_large"
    assert "blob.bin" in row.error_detail and "1 MiB" in row.error_detail
    cell_dir = c.run_dir / "cells" / "shell-slug_ids"
    assert json.loads((cell_dir / "export.json").read_text())["too_large"] is True
    assert not (cell_dir / "checker.log").exists() and not (cell_dir / "artifact.tar").exists()


def test_links_and_special_files_are_dropped_listed_and_the_rest_graded(ctx, shell, monkeypatch, no_leftovers):
    """A virtualenv in the workspace has links; the ceiling's files beside them are still graded."""
    ceiling = load_all_tasks(REPO)["slug_ids"].reference("informed")
    monkeypatch.setattr(shell, "commands", [
        "mkdir -p /sandbox/workspace/.venv/bin && ln -s /usr/bin/python3 /sandbox/workspace/.venv/bin/python",
        "ln -s /etc/passwd /sandbox/workspace/leak && ln /sandbox/workspace/README.md /sandbox/workspace/hard 2>/dev/null; "
        "mkfifo /sandbox/workspace/pipe",
    ])
    c = ctx()
    informed = {p.relative_to(ceiling).as_posix(): p.read_bytes() for p in ceiling.rglob("*") if p.is_file()}

    class Ceiling(ShellAgent):
        def run(self, sandbox, prompt):
            from runner.env.archive import Entry, pack
            sandbox.put("/sandbox", pack([Entry(f"workspace/{k}", v) for k, v in informed.items()], uid=1000, gid=1000))
            return super().run(sandbox, prompt)

    monkeypatch.setitem(agent_module.AGENTS, "shell", Ceiling)
    row = run_cell(c, cell(), 1)
    cell_dir = c.run_dir / "cells" / "shell-slug_ids"
    dropped = {d["path"]: d["kind"] for d in json.loads((cell_dir / "export.json").read_text())["dropped"]}
    assert dropped[".venv/bin/python"] == "symlink" and dropped["leak"] == "symlink" and dropped["pipe"] == "fifo"
    assert row.admitted and row.checker_passed is True, row.checker_detail  # graded despite the links
    assert b"root:x:0:0" not in (cell_dir / "artifact.tar").read_bytes(), "a link was followed"


def test_an_output_flood_is_kept_bounded(engine, images, run_id, no_leftovers):
    """500 MB on stdout: the controller keeps the head and the tail and counts the rest."""
    bundle = build_bundle(load_all_tasks(REPO)["slug_ids"], load_all_arms(REPO)["bare"], {})
    rss = psutil.Process()
    with Sandbox(engine, images.sandbox.tag, run_id, "flood", bundle_tar=bundle.tar, lifetime=300,
                 disk=DiskBudget()) as sandbox:
        before = rss.memory_info().rss
        result = sandbox.exec(["sh", "-c", "echo FIRST; head -c 500000000 /dev/zero | tr '\\0' y | fold -w 999; echo; echo LAST"],
                              timeout=240)
        grown = rss.memory_info().rss - before
    assert result.exit_code == 0
    assert result.stdout_bytes > 500_000_000
    assert result.stdout.startswith("FIRST\n") and result.stdout.endswith("\nLAST")
    assert len(result.stdout) <= 17 * MIB
    assert result.stdout_dropped_bytes + len(result.stdout) + 1 >= 500_000_000
    assert result.stdout_dropped_lines > 400_000
    assert grown < 200 * MIB, f"the controller grew {grown / MIB:.0f} MiB while capturing the flood"


def test_grid_and_doctor_warn_when_the_host_is_short_of_space(engine, tmp_path, monkeypatch):
    from runner.env import doctor

    monkeypatch.setattr(doctor, "MIN_FREE_GB", 0)
    assert doctor.space_warnings(engine, tmp_path) == []
    monkeypatch.setattr(doctor, "MIN_FREE_GB", 10**9)  # no host has that much: every place is short
    warnings = doctor.space_warnings(engine, tmp_path)
    root = engine.info()["DockerRootDir"]
    assert any(str(tmp_path) in w for w in warnings) and any(root in w for w in warnings), warnings
    assert all(w.startswith("warning: only ") and "run folder" in w for w in warnings)
    checks = {c.name: c for c in doctor.run_checks(tmp_path, REPO)}
    assert not checks["disk (run folder)"].ok and not checks["disk (engine data root)"].ok
