"""The planted-memory protocol: with the arm's memory on, does the agent succeed more often or more cheaply
than with it off, and which retrieval lane carries the effect?

A unit is a planted task (tasks/planted/<id>, tasks.py); a condition is one of the arm's switches:
`off` (its own kill switch), `on`, `ablate:<lane>` (one retrieval lane disabled), `ablate:all`. A cell
runs four containers:
1. plant (harness step, the arm's image): the task's memories go in through the arm's own write API
   (arm.yaml `planted.plant`) into a namespace unique to the cell (under `off`, none: its store holds nothing
   a shell could read); the ids it returns are kept and the namespace is counted to prove they landed;
2. session: a fresh sandbox with the fixture and the planted store; the arm's server starts with the
   condition's switches and logs what it serves; the memory is never pasted into the prompt;
3. check: the workspace as the agent left it (/artifact), judged by the task's hidden/check.py (hidden/ at
   /oracle, the judge's alone) in the checker container the sandbox never saw;
4. forget (harness step): every planted id forgotten by its exact id, then the namespace counted again.
Injection is confirmed when the arm's own log names a planted id inside the session's time window and,
for an agent that is not memgrid's own, a record outside the sandbox agrees (confirm); a cell is credited
by the Memory Utility Index (analysis.py) only when it is, and never when the model read a planted memory
around the arm first (a shell on the store): that run is scored as it ran, flagged, and earns the arm nothing.
"""

import json
import re
import time
from dataclasses import asdict
from datetime import datetime, timezone

from runner.agents.base import ReferenceChannel
from runner.agents.script import scripted_search
from runner.agents.registry import agent_class
from runner.arms.kinds import STORE_DIR, WORKSPACE, kind_of
from runner.env.archive import Entry, pack
from runner.env.bundle import Bundle, arm_instructions, bundle_of, tree_entries
from runner.errors import SpecError
from runner.exec.trial import (PhaseSpec, StepResult, TrialContext, agent_config, cell_failure, harness_step, new_row,
                               now, run_phase, session_fields, wait_for_removals, write_json)
from runner.grading import gate
from runner.grading.checker import GRACE_SECONDS, grade_in_container, grading_inputs
from runner.plan.grid import CellSpec
from runner.plan.spec import ArmSpec, GridSpec, PlantApi, TaskSpec, project_root
from runner.protocols.base import Protocol
from runner.protocols.planted import analysis
from runner.protocols.planted.tasks import OVERLAY_JUDGE, task_digest
from runner.results.ledger import LedgerRow
from runner.sources.registry import HostedSuite, hosted_suite
from runner.units.planted import PlantedTask, load_planted_tasks, load_split

ARM_LOG = "/sandbox/.arm-log/served.jsonl"  # where the arm's server logs what it served ({log})
ECHO_WORDS = 8  # a run of this many words of a memory in the artifact is a surface echo


def namespace_of(cell: CellSpec) -> str:
    return f"memgrid-{cell.cell_id}"


def lanes_off(condition: str, api: PlantApi) -> tuple[str, ...]:
    if not condition.startswith("ablate:"):
        return ()
    lane = condition.removeprefix("ablate:")
    return api.lanes if lane == "all" else (lane,)


def server_env(api: PlantApi, condition: str, namespace: str) -> dict[str, str]:
    """The arm's server environment under a condition: its own variables, its kill switch (off), the
    disabled lanes (ablate)."""
    env = {k: v.replace("{namespace}", namespace).replace("{log}", ARM_LOG) for k, v in api.env.items()}
    if condition == "off":
        env.update(api.kill_switch)
    if off := lanes_off(condition, api):
        env[api.lane_env] = ",".join(off)
    return env


def fill(command: tuple[str, ...], namespace: str) -> list[str]:
    return [p.replace("{store}", STORE_DIR).replace("{namespace}", namespace) for p in command]


def reader_channel(task: PlantedTask) -> ReferenceChannel:
    """The reader's options (the terms of the memory the solution follows) and the files of each."""
    options = {"informed": list(task.terms)}
    entries = [Entry("options.json", json.dumps(options, indent=1).encode())]
    for option in ("naive", "informed"):
        entries += [Entry(f"solutions/{option}/{e.path.removeprefix('s/')}", e.data, e.mode)
                    for e in tree_entries(task.reference(option), "s")]
    return ReferenceChannel("options", tuple(entries), (), {"options": options})


def model_script(task: PlantedTask, arm: ArmSpec) -> dict:
    """What the scripted model plays (the coding script's shape): search the arm, pick the option whose
    terms a retrieved memory names, write its files."""
    search = scripted_search(arm, task.prompt)
    fixture = {e.path for e in tree_entries(task.fixture, "w")}
    solutions = {option: [{"path": f"{WORKSPACE}/{e.path.removeprefix('w/')}", "content": e.data.decode(),
                           "exists": e.path in fixture} for e in tree_entries(task.reference(option), "w")]
                 for option in ("naive", "informed")}
    return {"prompt": task.prompt, "search": search, "options": {"informed": list(task.terms)}, "solutions": solutions}


def parse_ids(result: StepResult) -> list[str] | None:
    """The ids a step printed ({"ids": [...]} on its last line), or None when it printed none."""
    for line in reversed(result.stdout.strip().splitlines()):
        try:
            ids = json.loads(line).get("ids")
        except (json.JSONDecodeError, AttributeError):
            return None
        return [str(i) for i in ids] if isinstance(ids, list) else None
    return None


def injection(log_text: str, planted: list[str], start: datetime, end: datetime) -> dict:
    """Whether the arm's own log names a planted id inside the session's window, and what it served."""
    served, lines, outside = [], 0, 0
    for line in log_text.splitlines():
        try:
            entry = json.loads(line)
            ts = datetime.fromisoformat(entry["ts"])
            ids = [str(i) for i in entry.get("ids", [])]
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            continue
        lines += 1
        if not start <= ts <= end:
            outside += 1
            continue
        served += [i for i in ids if i in planted and i not in served]
    return {"confirmed": bool(served), "planted_ids_served": served, "log_lines": lines, "outside_window": outside}


def tool_results(gateway: list[dict]):
    """Every tool result the gateway saw reach the model, in order, each once."""
    for request in gateway:
        yield from request.get("tool_results") or []


def delivered(gateway: list[dict], prefix: str, planted: list[str]) -> list[str]:
    """The planted ids that reached the model in a result of one of the arm's own tools, by the gateway's
    record (outside the sandbox): a result the model got from any other tool (a shell reading the store)
    is not the memory delivering."""
    found = []
    for r in tool_results(gateway):
        if str(r.get("tool", "")).startswith(prefix) and not r.get("is_error"):
            found += [i for i in planted if i in str(r.get("text", "")) and i not in found]
    return found


def quotes_memory(text: str, memories) -> bool:
    """`text` repeats ECHO_WORDS consecutive words of a memory (case and punctuation aside)."""
    body = " ".join(words(text))
    return any(" ".join(w[k:k + ECHO_WORDS]) in body for w in (words(m.content) for m in memories)
               for k in range(len(w) - ECHO_WORDS + 1))


def read_around_the_arm(gateway: list[dict], prefix: str, planted: list[str], memories) -> dict | None:
    """The first result of a tool other than the arm's that carried a planted memory (its id, or a run of its
    words) to the model before the arm itself had delivered one: a shell or a file read of the store. None when
    the memory reached the model only through the arm, or not at all. Results after the arm delivered are the
    model's own work (a file it wrote from the memory, read back)."""
    for r in tool_results(gateway):
        text = str(r.get("text", ""))
        if r.get("is_error") or not (any(i in text for i in planted) or quotes_memory(text, memories)):
            continue
        if str(r.get("tool", "")).startswith(prefix):
            return None
        return {"tool": r.get("tool") or "an unnamed tool", "call": r.get("call")}
    return None


def confirm(log_check: dict, agent_cls, gateway: list[dict] | None, prefix: str, planted: list[str], memories) -> dict:
    """Injection as the protocol credits it. The arm's log is written inside the sandbox, where any agent
    but memgrid's own could write a line naming a planted id itself; so for an agent with a model the
    gateway's record must also show a planted id arriving in one of the arm's tool results, and no planted
    memory reaching the model around the arm first (a model that read the store with a shell got the memory,
    but not from the arm). An agent with neither record (a command agent) cannot be confirmed. Reading around
    the arm is the model's doing: the cell is scored as it ran, only never credited to the arm."""
    if agent_cls.harness_code:
        return {**log_check, "evidence": "arm log (memgrid's own agent)"}
    if gateway is not None:
        ids = delivered(gateway, prefix, planted)
        around = read_around_the_arm(gateway, prefix, planted, memories)
        return {**log_check, "confirmed": log_check["confirmed"] and bool(ids) and around is None,
                "delivered_ids": ids, "read_around_the_arm": around,
                "evidence": "arm log and the gateway's record of what reached the model"}
    return {**log_check, "confirmed": False, "evidence": None,
            "unverifiable": "only the arm's log, written inside a sandbox this agent controls, could confirm it"}


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def surface_echo(task: PlantedTask, artifact: list[Entry]) -> bool:
    """A reference number only: the artifact repeats ECHO_WORDS consecutive words of a planted memory."""
    return quotes_memory(" ".join(e.data.decode(errors="replace") for e in artifact), task.memories)


def tokens_total(fields: dict) -> int | None:
    parts = [fields[k] for k in ("tokens_fresh_input", "tokens_cache_read", "tokens_cache_creation", "tokens_output")
             if fields.get(k) is not None]
    return sum(parts) if parts else None


def check_inputs(task: PlantedTask, artifact: list[Entry]) -> bytes:
    """The workspace exactly as the agent left it at /artifact (read-only; the artifact user runs it) and
    hidden/ at /oracle, readable by the judge alone. hidden/ is never laid over the workspace: no file the
    agent leaves can shadow or steer the judge, and the artifact code check.py runs (only through
    memgrid_check, as another user) cannot read the expected values. A hosted task's own check (check_shell)
    gets hidden/ at /oracle/hidden, its command and the judge that lays hidden/ over the workspace
    (stubs/overlay_check.py): not isolated, as its benchmark runs it."""
    if task.check_shell is None:
        return grading_inputs(artifact, tree_entries(task.hidden, "oracle"))
    return grading_inputs(artifact, [*tree_entries(task.hidden, "oracle/hidden"),
                                     Entry("oracle/check_cmd.txt", task.check_shell.encode()),
                                     Entry("oracle/overlay_check.py", OVERLAY_JUDGE.read_bytes())])


def check_command(task: PlantedTask) -> list[str]:
    if task.check_shell is not None:
        return ["python3", "/oracle/overlay_check.py", str(task.check_seconds)]
    return [p.replace("{artifact}", "/artifact").replace("{oracle}", "/oracle") for p in task.check]


class PlantedProtocol(Protocol):
    name = "planted"
    reads = ("tasks", "arms")  # tasks/planted/, or a hosted suite's tasks/<suite>/
    description = ("Memories planted through the arm's own write API into a namespace per cell; the agent codes "
                   "with memory off, on, or one lane ablated; the task's hidden judge grades; Memory Utility Index.")

    def __init__(self):
        self._tasks: dict = {}  # (checkout root, suite) -> its planted tasks, read once
        self._splits: dict = {}  # (checkout root, suite) -> (task -> visible | holdout, the split's digest)

    def tasks(self, root=None, hosted: HostedSuite | None = None) -> dict[str, PlantedTask]:
        """tasks/planted/'s tasks, or those of a hosted suite (tasks/<suite>/, as imported)."""
        root = root or project_root()
        if (root, hosted) not in self._tasks:
            self._tasks[root, hosted] = (load_planted_tasks(root) if hosted is None else
                                         hosted.source().planted_tasks(hosted.folder(root)))
        return self._tasks[root, hosted]

    def fixture(self, root, unit: str):
        task = self.tasks(root).get(unit)
        return task.fixture if task is not None else None

    def split(self, root=None, hosted: HostedSuite | None = None) -> tuple[dict[str, str], str]:
        root = root or project_root()
        if (root, hosted) not in self._splits:
            self._splits[root, hosted] = (load_split(root, self.tasks(root)) if hosted is None else
                                          hosted.source().planted_split(hosted.folder(root)))
        return self._splits[root, hosted]

    def hosted(self, grid: GridSpec, grid_path) -> HostedSuite | None:
        """The grid's hosted suite (a benchmark's tasks as published), or None: memgrid's tasks/planted/."""
        return hosted_suite(grid, grid_path, self.name)

    def unit_ids(self, grid: GridSpec, tasks: dict[str, TaskSpec], grid_path) -> list[str]:
        hosted = self.hosted(grid, grid_path)
        found = self.tasks(hosted=hosted)
        where = "tasks/planted/" if hosted is None else f"suite {hosted.suite}"
        ids = sorted(found) if grid.tasks == "all" else list(grid.tasks)
        for i in ids:
            if i not in found:
                raise SpecError(grid_path, "tasks", f"names '{i}', which is not a planted task of {where}",
                                f"use ids from {where} ({', '.join(sorted(found)[:3])}, ...) or all")
        if not ids:
            raise SpecError(grid_path, "tasks", f"selects no planted task of {where}", "add a task or use all")
        return ids

    def units(self, grid: GridSpec, tasks: dict[str, TaskSpec], grid_path) -> dict[str, str]:
        hosted = self.hosted(grid, grid_path)
        found = self.tasks(hosted=hosted)
        _, split_sha = self.split(hosted=hosted)
        return {i: task_digest(found[i], split_sha) for i in self.unit_ids(grid, tasks, grid_path)}

    def unisolated(self, grid: GridSpec, tasks: dict[str, TaskSpec], grid_path) -> dict[str, str]:
        found = self.tasks(hosted=self.hosted(grid, grid_path))
        return {i: t.unisolated for i, t in found.items() if t.unisolated}

    def graded_unisolated(self, grid: GridSpec, tasks: dict[str, TaskSpec], task_ids: list[str], grid_path) -> dict[str, str]:
        return {t: why for t, why in self.unisolated(grid, tasks, grid_path).items() if t in task_ids}

    def prepare(self, client, grid: GridSpec, grid_path, images, log=print) -> HostedSuite | None:
        return self.hosted(grid, grid_path)  # the suite the cells' tasks come from

    def lock_entries(self, setup: HostedSuite | None) -> dict:
        return {} if setup is None else {"hosted_suite": setup.lock_entry()}

    def pairs(self, grid: GridSpec, units: list[str], tasks: dict[str, TaskSpec]) -> list[tuple[str, str]]:
        return [(u, c) for u in units for c in grid.conditions]

    def check(self, grid: GridSpec, grid_path, arms: dict[str, ArmSpec], agent_classes: dict) -> None:
        super().check(grid, grid_path, arms, agent_classes)
        unisolated = self.unisolated(grid, {}, grid_path)
        for task_id in self.unit_ids(grid, {}, grid_path):
            if task_id in unisolated and task_id not in grid.unisolated_checkers:
                raise SpecError(grid_path, "unisolated_checkers", f"does not name '{task_id}', whose check is not "
                                f"isolated ({unisolated[task_id]})", f"accept it by name: unisolated_checkers: "
                                f"[{task_id}], or drop it from the grid's tasks")
        for name in grid.arms:
            arm = arms[name]
            api = arm.planted
            if api is None or kind_of(arm).own_server(arm) is None:
                raise SpecError(grid_path, "arms", f"names '{name}', which has no planted write API (arm.yaml "
                                "'planted:') or no server of its own", "use recall, or add a planted section to the arm")
            for c in grid.conditions:
                lane = c.removeprefix("ablate:")
                if c.startswith("ablate:") and lane != "all" and lane not in api.lanes:
                    raise SpecError(grid_path, "conditions", f"names '{c}', but arm '{name}' has no lane '{lane}'",
                                    f"use ablate: with one of {', '.join(api.lanes) or '(none)'} or all")
            if any(c.startswith("ablate:") for c in grid.conditions) and (not api.lanes or api.lane_env is None):
                raise SpecError(arm.root / "arm.yaml", "planted.lanes", "is needed by the grid's ablate: conditions",
                                "list the arm's lanes and name lane_env, or drop the ablate: conditions")

    def bundle(self, ctx: TrialContext, cell: CellSpec, task: PlantedTask, store: tuple[Entry, ...]) -> Bundle:
        arm = ctx.arms[cell.arm]
        env = server_env(arm.planted, cell.condition, namespace_of(cell))
        config = agent_config(cell, arm, mcp_env=env)
        entries = [*tree_entries(task.fixture, "workspace"), Entry("agent/prompt.txt", task.prompt.encode()),
                   Entry("agent/instructions.md", arm_instructions(arm).encode()),
                   Entry("agent/config.json", json.dumps(config, sort_keys=True, indent=2).encode()),
                   *(Entry(f"store/{e.path}", e.data) for e in store),
                   *agent_class(cell.agent, ctx.command_agents).bundle_entries(arm, config)]
        return bundle_of(entries)

    def run_cell(self, ctx: TrialContext, cell: CellSpec, attempt: int, bundle: Bundle | None = None) -> LedgerRow:
        hosted: HostedSuite | None = ctx.protocol_setup
        task, arm = self.tasks(ctx.root, hosted)[cell.task], ctx.arms[cell.arm]
        api, namespace = arm.planted, namespace_of(cell)
        cell_dir = ctx.run_dir / "cells" / cell.cell_id
        cell_dir.mkdir(parents=True, exist_ok=True)
        started_at, t0 = now(), time.monotonic()
        row = new_row(ctx, cell, attempt)
        proofs: list[dict] = []
        split, split_sha = self.split(ctx.root, hosted)
        result: dict = {"namespace": namespace, "condition": cell.condition, "split": split[cell.task],
                        "split_sha256": split_sha, "step_seconds": {}}
        steps_t = result["step_seconds"]

        def took(name: str, since: float) -> None:
            steps_t[name] = round(time.monotonic() - since, 3)

        def finish(**updates) -> LedgerRow:
            row.update(updates)
            row["gate_proofs"] = json.dumps(proofs)
            write_json(cell_dir / "planted.json", result)
            return LedgerRow(**row, started_at=started_at, ended_at=now(), wall_seconds=round(time.monotonic() - t0, 3),
                             protocol=self.name, result=json.dumps(result))

        try:
            # 1. Plant through the arm's own write API; count what landed. Under `off` nothing is planted: the
            # store sits in the session's sandbox, where a shell could read whatever it held, so `off` holds no
            # memory of the task at all, whatever the model does (the kill switch still answers its tools).
            to_plant = [] if cell.condition == "off" else task.memories
            memories = json.dumps([asdict(m) for m in to_plant]).encode()
            t = time.monotonic()
            steps, store, digest, proof = harness_step(ctx, cell, arm, (), [
                ("plant", fill(api.plant, namespace), memories), ("count", fill(api.count, namespace), b"{}")])
            took("plant", t)
            proofs.append({"phase": "plant", **vars(proof)})
            planted = parse_ids(steps[0]) if steps else None
            counted = parse_ids(steps[1]) if len(steps) > 1 else None
            landed = planted is not None and len(planted) == len(to_plant) and set(planted) <= set(counted or ())
            detail = (f"{len(planted)} memories planted in namespace {namespace}" + (" (memory off)" if not to_plant else "")
                      if landed else
                      f"plant exited {steps[0].exit_code}: {(steps[0].stderr or steps[0].stdout).strip()[-300:]}" if steps
                      else "the harness step's bundle failed verification")
            proofs.append({"phase": "plant", **vars(gate.GateProof("memories_planted", landed, detail))})
            result.update(planted_ids=planted or [], plant_store_digest=digest)
            write_json(cell_dir / "plant.json", {"steps": [asdict(s) for s in steps], "store_digest": digest})
            if not landed:
                return finish(admitted=False, discard_reason=gate.PLANT_FAILED)
            ctx.check_cancel()

            # 2. The session: the planted store, the condition's switches, the arm's log collected.
            bundle = bundle or self.bundle(ctx, cell, task, store)
            row.update(bundle_digest=bundle.digest, store_digest=digest)
            (cell_dir / "bundle.manifest").write_text(bundle.manifest)
            window_start, t = datetime.now(timezone.utc), time.monotonic()
            session = run_phase(ctx, cell, PhaseSpec(
                "session", task.prompt, bundle, cell_dir, task.agent_seconds, reader_channel(task),
                snapshot_store=True, required_paths=(), collect=(ARM_LOG,), model_script=model_script(task, arm)), attempt)
            window_end = datetime.now(timezone.utc)
            took("session", t)
            try:
                fields = session_fields(session)
                row.update(fields)
                proofs.extend({"phase": "session", **p} for p in session.decision.as_json())
                (cell_dir / "arm-log.jsonl").write_text(session.collected.get(ARM_LOG, ""))
                prefix = kind_of(arm).own_server(arm).prefix
                result["injection"] = confirm(injection(session.collected.get(ARM_LOG, ""), planted, window_start, window_end),
                                              agent_class(cell.agent, ctx.command_agents), session.gateway, prefix, planted,
                                              task.memories)
                result["tokens_total"] = tokens_total(fields)
                if not session.decision.admitted:
                    return finish(final=not (session.decision.discard_reason in gate.WIRING
                                             and attempt < gate.MAX_ATTEMPTS))
                ctx.check_cancel()
                artifact = list(session.exported.entries) if session.exported is not None else []
                (cell_dir / "artifact.tar").write_bytes(pack(artifact))
                # 3. The check: hidden/check.py (at /oracle) judges the workspace, in the checker's container.
                spec = {"checker": {"command": check_command(task), "timeout": task.check_seconds}, "detector": None}
                bound = task.check_seconds + GRACE_SECONDS
                t = time.monotonic()
                grade, log, seconds = grade_in_container(ctx.client, ctx.images.checker.tag, check_inputs(task, artifact),
                                                         spec, bound, run_id=ctx.run_id, cell_id=cell.cell_id,
                                                         limits=ctx.limits)
            finally:
                wait_for_removals([session.remover])
            took("check", t)
            (cell_dir / "checker.log").write_text(log)
            checker = (grade or {}).get("checker") or {}
            passed = checker.get("exit") == 0 and not checker.get("timed_out")
            detail = ("exit 0" if passed else f"timed out after {task.check_seconds}s" if checker.get("timed_out") or grade is None
                      else f"exit {checker.get('exit')}: " + next((l for l in reversed(checker.get("output", "").splitlines())
                                                                  if l.strip()), "")[:300])
            result["echo"] = surface_echo(task, artifact)

            # 4. Forget every planted id by its exact id; count what is left. A store the session wrote past the
            # cap was not read (the agent's doing, recorded): there is nothing to forget from.
            t = time.monotonic()
            if session.store is None:
                result["forgotten"] = {"ok": None, "left": None, "forget_exit": None,
                                       "skipped": "the session's store is over the cap: not read"}
            else:
                steps, _, _, proof = harness_step(ctx, cell, arm, session.store, [
                    ("forget", fill(api.forget, namespace), json.dumps({"ids": planted}).encode()),
                    ("count", fill(api.count, namespace), b"{}")])
                left = parse_ids(steps[1]) if len(steps) > 1 else None
                result["forgotten"] = {"ok": proof.passed and left is not None and not set(left) & set(planted),
                                       "left": sorted(set(left or ()) & set(planted)) if left is not None else None,
                                       "forget_exit": steps[0].exit_code if steps else None}
                write_json(cell_dir / "forget.json", {"steps": [asdict(s) for s in steps]})
            took("forget", t)
            result["passed"] = passed
            return finish(checker_passed=passed, checker_exit_code=checker.get("exit"), checker_detail=detail,
                          checker_seconds=seconds, outcome="solved" if passed else "failed")
        except Exception as e:
            return finish(**cell_failure(ctx, e))

    def summary(self, rows: list[dict], planned: int | None = None) -> list[dict]:
        return analysis.summarise(rows)

    def summary_table(self, summary: list[dict]) -> tuple[list[str], list[list[str]]]:
        return analysis.table(summary)

    def extra_tables(self, summary: list[dict]) -> list[tuple[str, list[str], list[list[str]], str]]:
        return [("per split, as SMRITI's scorer", *analysis.split_table(summary), analysis.SPLIT_NOTE)]

    def report_html(self, run_id: str, lock: dict, summary: list[dict]) -> str | None:
        from runner.protocols.planted.report import render  # matplotlib: only when a page is asked for

        return render(run_id, lock, summary)
