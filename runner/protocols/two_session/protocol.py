"""The two-session recall protocol: does the arm carry what the agent wrote in one session into the next?

A unit is a generated case (cases.py): an accounts-receivable ledger and a derivation of it. Step 1
shows the table and asks the agent to work out the value and remember it; step 2, in a fresh
container that cannot reach step 1's files, asks for the value. The only thing that passes between
them is the arm's store (/sandbox/store) as step 1 left it: snapshotted, its digest recorded in
cells/<id>/phases.json, checked against the saved snapshot before step 2 starts (a mismatch discards
the cell), and verified again inside step 2's container as part of its bundle. The deterministic
judge (judge.py) scores step 2's output; nothing else is scored.

Arms: `none` (the floor: nothing survives), `files` arms with a `memory_file` (the file is the store),
and `mcp` arms (the store their own ingest makes of an empty corpus, written through their own write
tools). Arms whose files or memory come from coding tasks and their corpora cannot host it.
"""

import json
import time
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Callable

from runner.agents.base import ReferenceChannel, Transcript, first_ending
from runner.agents.script import search_queries
from runner.agents.command import CommandAgent
from runner.agents.registry import agent_class
from runner.arms.ingest import EMPTY, ensure_empty_stores
from runner.arms.kinds import kind_of
from runner.digest import sha256_bytes, sha256_json
from runner.env.archive import Entry, pack, safe_entries
from runner.env.bundle import Bundle, arm_instructions, bundle_of
from runner.errors import SpecError
from runner.exec.trial import (PhaseSpec, TrialContext, agent_config, cell_failure, cell_memory, new_row, now,
                               run_phase, session_fields, wait_for_removals, write_json)
from runner.grading import gate
from runner.plan.grid import CellSpec
from runner.plan.spec import DEFAULT_SUITE, ArmSpec, GridSpec, TaskSpec
from runner.protocols.base import Protocol
from runner.protocols.two_session import cases as casegen
from runner.protocols.two_session.hosted import GRADER_FILE, PUBLISHED, grade_run, hosted_cases, judge_session
from runner.protocols.two_session.judge import judge
from runner.results.ledger import LedgerRow
from runner.sources.registry import HostedSuite, hosted_suite

AGENT_SECONDS = 300
CONTROL_AGENT = "reader"  # starts the arm's server on a store no agent touched: an MCP client whose record is memgrid's
STORE_UNREADABLE = "store_unreadable"  # step 2's arm failed on the store step 1's agent left: scored, not discarded
# What a store step 1 left can make step 2 fail: its server does not start, or a file it needs was not carried (a
# link or a fifo in its place is dropped, never followed).
STORE_FAULTS = (gate.MCP_SERVER_FAILED, gate.REQUIRED_PATH_MISSING)
GRADER_COLUMNS = 5  # of a hosted task's grader output shown in the run's summary
README = ("# Scratch space\n\nThis folder is yours for this session. Nothing here is graded; only your answer is.\n")
GENERATOR_FILES = ("cases.py", "judge.py")


@cache
def generator_digest() -> str:
    here = Path(__file__).resolve().parent
    return sha256_json({name: sha256_bytes((here / name).read_bytes()) for name in GENERATOR_FILES})


@cache
def cases_of(n: int) -> dict[str, casegen.Case]:
    return {c.id: c for c in casegen.generate_cases(n)}


def case_digest(case: casegen.Case) -> str:
    """What defines a case: its own fields and the code that renders, derives and judges it."""
    return sha256_json({"case": {"id": case.id, "seed": case.seed, "derivation": case.derivation,
                                 "params": case.params, "size": case.size}, "generator": generator_digest()})


def recall_channel(key: str, value: str, phase: str) -> ReferenceChannel:
    """What the reader is handed: in step 1 the line to remember (as a model that derived the value
    would write it), in step 2 only the key to look for in what its memory returns."""
    if phase == "step1":
        text = f"{key} = {value}"
        return ReferenceChannel("remember", (Entry("remember.json", json.dumps({"text": text}).encode()),),
                                ("--remember",), {"key": key})
    return ReferenceChannel("recall", (Entry("recall.json", json.dumps({"key": key}).encode()),), ("--answer",),
                            {"key": key})


def reader_channel(case: casegen.Case, phase: str) -> ReferenceChannel:
    return recall_channel(casegen.key(case), casegen.answer(case), phase)


def recall_script(key: str, value: str, step2_prompt: str, arm: ArmSpec, phase: str) -> dict:
    """What the scripted model plays (it reaches the model container only): in step 1, the line a model
    that derived the value would remember, through the arm's write path (its write tool called as arm.yaml's
    mcp.write says, or its notes file); in step 2, where to look and the key to look for. A model searches
    for the value by its key, with the search tool's own arguments, one call per word of it for a substring
    search (as the reader does)."""
    write, server = kind_of(arm).write_path(arm), kind_of(arm).own_server(arm)
    if phase == "step1":
        text = f"{key} = {value}"
        path = {} if write is None else {"tool": server.prefix + write["tool"], "input": server.write.call(text)} \
            if "tool" in write else {"file": write["file"]}
        return {"mode": "remember", "text": text, "write": path}
    if write is None:
        search = {}
    elif "tool" in write:
        call = server.search.as_config()
        search = {"tool": server.prefix + server.search_tool, "call": call,
                  "queries": search_queries(key, call)}
    else:
        search = {"read": [write["file"]]}
    return {"mode": "answer", "key": key, "prompt": step2_prompt, "search": search}


def model_script(case: casegen.Case, arm: ArmSpec, phase: str) -> dict:
    """A generated case's script: its key is the name step 2's prompt quotes."""
    return recall_script(casegen.key(case), casegen.answer(case), casegen.step2_prompt(case), arm, phase)


def env_proof(env_lines: str, secrets: list[str]) -> gate.GateProof:
    """Scrub by value: no variable of step 2's session (whatever its name) holds the answer or names
    step 1's inputs."""
    leaks = sorted({line.split("=", 1)[0] for line in env_lines.splitlines() for s in secrets if s and s in line})
    return gate.GateProof("inputs_unreachable", not leaks,
                          f"{len(env_lines.splitlines())} variables, none holds step 1's inputs" if not leaks
                          else f"variables holding step 1's inputs: {', '.join(leaks)}")


@dataclass(frozen=True)
class CaseUnit:
    """What a cell's two sessions need of its case, generated or hosted: each session's prompt, what the
    reference agents and the scripted model are handed, the values no session's environment may hold, and how
    session 2's output is scored (`score(ctx, cell, transcript)` -> the ledger's result and whether it recalled)."""
    prompts: tuple[str, str]
    secrets: tuple[str, ...]
    channels: tuple[ReferenceChannel, ReferenceChannel]
    scripts: tuple[dict | None, dict | None]
    score: Callable[[TrialContext, CellSpec, Transcript], tuple[dict, bool]]


def generated_unit(case: casegen.Case, arm: ArmSpec) -> CaseUnit:
    gold, key = casegen.answer(case), casegen.key(case)

    def score(ctx, cell, transcript: Transcript) -> tuple[dict, bool]:
        verdict = judge(transcript.output, gold)
        return ({"score": verdict.score, "reason": verdict.reason, "last_line": verdict.last_line[:300],
                 "candidates": list(verdict.candidates)[:20], "gold": gold, "key": key,
                 "derivation": case.derivation}, verdict.score == 1)

    secrets = (gold, f"{float(gold):,.2f}" if case.derivation in casegen.MONEY_DERIVATIONS else gold)
    return CaseUnit((casegen.step1_prompt(case), casegen.step2_prompt(case)), secrets,
                    (reader_channel(case, "step1"), reader_channel(case, "step2")),
                    (model_script(case, arm, "step1"), model_script(case, arm, "step2")), score)


def exit_code_of(transcript: Transcript) -> int:
    """The session's exit status as its program reported it (a command agent's `result` event); otherwise 0 for a
    session that ended ok and 1 for any other ending."""
    code = next((e.get("exit_code") for e in reversed(transcript.events) if e.get("type") == "result"), None)
    return code if isinstance(code, int) else (0 if transcript.ended == "ok" else 1)


def hosted_unit(hosted: HostedSuite, ctx: TrialContext, case_id: str, arm: ArmSpec) -> CaseUnit:
    """A hosted case. The reference agents and the scripted model are handed its expected answer to remember under
    the case's id in step 1 (as a model that derived it would), and look for that id in step 2."""
    case = hosted_cases(hosted, ctx.root)[case_id]

    def score(ctx, cell, transcript: Transcript) -> tuple[dict, bool]:
        verdict, log = judge_session(ctx, cell, hosted, transcript.output, exit_code_of(transcript))
        if verdict is None:  # a judge that gives no verdict on what the agent printed scores it 0, never discards it
            return {"score": 0.0, "reason": f"the task's judge gave no verdict: {log.strip()[-300:]!r}",
                    "judge": None, "suite": hosted.suite}, False
        return {"score": verdict["score"], "reason": str(verdict.get("reason", "")), "judge": verdict,
                "suite": hosted.suite}, verdict["score"] >= 1
    if case.reference is None:
        return CaseUnit((case.prompts[0], case.prompts[1]), case.secrets, (ReferenceChannel(), ReferenceChannel()),
                        (None, None), score)
    channels = tuple(recall_channel(case.id, case.reference, phase) for phase in ("step1", "step2"))
    scripts = tuple(recall_script(case.id, case.reference, case.prompts[1], arm, phase) for phase in ("step1", "step2"))
    return CaseUnit((case.prompts[0], case.prompts[1]), case.secrets, channels, scripts, score)


class TwoSessionProtocol(Protocol):
    name = "two-session"
    passed_label = "recalled"
    reads = ("arms", "tasks")  # its generated cases are code; a hosted suite's are tasks/<suite>/
    description = ("Two sessions in fresh containers: step 1 derives a value from a generated ledger and "
                   "remembers it, step 2 asks for it; only the arm's store passes between them.")

    def hosted(self, grid: GridSpec, grid_path) -> HostedSuite | None:
        """The grid's hosted suite (its cases as published), or None: memgrid's generated cases."""
        return hosted_suite(grid, grid_path, self.name)

    def unit_ids(self, grid: GridSpec, tasks: dict[str, TaskSpec], grid_path) -> list[str]:
        return list(self.units(grid, tasks, grid_path))

    def units(self, grid: GridSpec, tasks: dict[str, TaskSpec], grid_path) -> dict[str, str]:
        hosted = self.hosted(grid, grid_path)
        if hosted is not None:
            cases = hosted_cases(hosted, None)
            chosen = list(cases) if grid.tasks == "all" else list(grid.tasks)
            for cid in chosen:
                if cid not in cases:
                    raise SpecError(grid_path, "tasks", f"names '{cid}', which is not a case of suite '{hosted.suite}'",
                                    f"use all, or cases of it: {', '.join(cases)}")
            return {cid: cases[cid].digest for cid in chosen}
        return {cid: case_digest(c) for cid, c in cases_of(grid.cases).items()}

    def pairs(self, grid: GridSpec, units: list[str], tasks: dict[str, TaskSpec]) -> list[tuple[str, str]]:
        if grid.suite != DEFAULT_SUITE:
            return [(u, PUBLISHED) for u in units if PUBLISHED in grid.conditions]
        found = cases_of(grid.cases)
        return [(u, found[u].derivation) for u in units if found[u].derivation in grid.conditions]

    def prepare(self, client, grid: GridSpec, grid_path, images, log=print) -> HostedSuite | None:
        return self.hosted(grid, grid_path)

    def lock_entries(self, setup: HostedSuite | None) -> dict:
        if setup is None:
            return {}
        cases = hosted_cases(setup, None)  # the lock shows the suite it ran
        return {"hosted_suite": {**setup.lock_entry(),
                                 "cases_digest": sha256_json(sorted((c.id, c.digest) for c in cases.values()))}}

    def check(self, grid: GridSpec, grid_path, arms: dict[str, ArmSpec], agent_classes: dict) -> None:
        super().check(grid, grid_path, arms, agent_classes)
        if grid.suite != DEFAULT_SUITE:
            if grid.cases is not None:
                raise SpecError(grid_path, "cases", f"is set, but suite '{grid.suite}' brings its own cases",
                                "remove cases (every case of the suite runs)")
            if tuple(grid.conditions) != (PUBLISHED,):
                raise SpecError(grid_path, "conditions", f"a hosted suite's cases run in the one condition {PUBLISHED}",
                                f"use conditions: [{PUBLISHED}]")
            references = [n for n, cls in agent_classes.items() if not issubclass(cls, CommandAgent)]
            if references:
                hosted = self.hosted(grid, grid_path)
                missing = [c.id for c in hosted_cases(hosted, None).values() if c.reference is None]
                if missing:
                    raise SpecError(grid_path, "agents", f"names '{references[0]}', which is handed each case's "
                                    f"expected answer to remember, and suite '{grid.suite}' has none for "
                                    f"{', '.join(missing[:5])}", "use command agents (command_agents) on this suite")
        elif grid.cases is None:
            raise SpecError(grid_path, "cases", "is missing", "give how many cases to generate, or a hosted suite")
        for name in grid.arms:
            arm = arms[name]
            if arm.files or kind_of(arm).reads_corpus and kind_of(arm).own_server(arm) is None:
                raise SpecError(grid_path, "arms", f"names '{name}', whose memory comes from coding tasks or their "
                                "corpora, so it cannot host two sessions", "use arms of kind none, files with a "
                                "memory_file (notes), or mcp (recall)")

    def stores(self, client, arms, pairs, settings, run_dir, images_by_arm, *, run_id, log=print, embedder=None,
               parallel=1, build=None) -> dict:
        return ensure_empty_stores(client, arms, run_dir, images_by_arm, run_id=run_id, log=log, embedder=embedder,
                                   build=build)

    def job_stores(self, ctx: TrialContext, cell: CellSpec) -> dict:
        """The empty store step 1 starts from, files and all: the node builds step 1's bundle from it."""
        key = (cell.arm, EMPTY, 0)
        return {key: ctx.stores[key]} if key in ctx.stores else {}

    def start_store(self, ctx: TrialContext, arm: ArmSpec) -> tuple[Entry, ...]:
        """The store a cell's step 1 starts from: the arm's own ingest of an empty corpus (mcp arms), or nothing."""
        snapshot = ctx.stores.get((arm.name, EMPTY, 0))
        return snapshot.entries if snapshot is not None else ()

    def control_start(self, ctx: TrialContext, cell: CellSpec, unit, attempt: int, cell_dir: Path) -> gate.GateProof:
        """Whether the arm works on the store step 1 started from: memgrid's reader in step 2's place, in a fresh
        container, admitted by the gate (its recall is never scored)."""
        reader = replace(cell, agent=CONTROL_AGENT)
        bundle = self.bundle(ctx, reader, "step2", unit.prompts[1], self.start_store(ctx, ctx.arms[cell.arm]))
        (cell_dir / "control").mkdir(parents=True, exist_ok=True)
        c = run_phase(ctx, reader, PhaseSpec("control", unit.prompts[1], bundle, cell_dir / "control", AGENT_SECONDS,
                                             unit.channels[1], export=None), attempt)
        wait_for_removals([c.remover])
        return gate.GateProof("arm_works_on_start_store", c.decision.admitted,
                              "admitted" if c.decision.admitted else f"discarded {c.decision.discard_reason}")

    def bundle(self, ctx: TrialContext, cell: CellSpec, phase: str, prompt: str, store: tuple[Entry, ...]) -> Bundle:
        arm = ctx.arms[cell.arm]
        config = agent_config(cell, arm, phase=phase)
        entries = [Entry("workspace/README.md", README.encode()), Entry("agent/prompt.txt", prompt.encode()),
                   Entry("agent/instructions.md", arm_instructions(arm).encode()),
                   Entry("agent/config.json", json.dumps(config, sort_keys=True, indent=2).encode()),
                   *kind_of(arm).memory_entries(arm, cell_memory(ctx, cell, store)),
                   *agent_class(cell.agent, ctx.command_agents).bundle_entries(arm, config)]
        return bundle_of(entries)

    def run_cell(self, ctx: TrialContext, cell: CellSpec, attempt: int, bundle: Bundle | None = None,
                 between=None) -> LedgerRow:
        """`between(cell_dir)`: a test's hook, run after step 1's store is saved and before it is checked."""
        arm = ctx.arms[cell.arm]
        hosted: HostedSuite | None = ctx.protocol_setup
        unit = hosted_unit(hosted, ctx, cell.task, arm) if hosted is not None else generated_unit(cases_of_cell(ctx, cell), arm)
        cell_dir = ctx.run_dir / "cells" / cell.cell_id
        started_at, t0 = now(), time.monotonic()
        row = new_row(ctx, cell, attempt)
        phases: dict[str, dict] = {}
        proofs: list[dict] = []

        def finish(**updates) -> LedgerRow:
            row.update(updates)
            row["gate_proofs"] = json.dumps(proofs)  # every phase's proofs, whatever a session's fields said
            write_json(cell_dir / "phases.json", phases)
            return LedgerRow(**row, started_at=started_at, ended_at=now(), wall_seconds=round(time.monotonic() - t0, 3),
                             protocol=self.name, result=json.dumps(result) if result else None)

        result: dict = {}
        try:
            for phase in ("step1", "step2"):
                (cell_dir / phase).mkdir(parents=True, exist_ok=True)
            # Step 1: the table, the derivation, and the request to remember.
            b1 = self.bundle(ctx, cell, "step1", unit.prompts[0], self.start_store(ctx, arm))
            (cell_dir / "step1" / "bundle.manifest").write_text(b1.manifest)
            ctx.check_cancel()
            # An arm without a store (bare) carries nothing, whatever the agent leaves in /sandbox/store.
            has_store = kind_of(arm).write_path(arm) is not None or kind_of(arm).ingests
            s1 = run_phase(ctx, cell, PhaseSpec("step1", unit.prompts[0], b1, cell_dir / "step1",
                                                AGENT_SECONDS, unit.channels[0], export=None,
                                                snapshot_store=has_store, writes=True,
                                                model_script=unit.scripts[0]), attempt)
            wait_for_removals([s1.remover])
            if not has_store:
                s1.store, s1.store_digest = (), sha256_bytes(pack([]))
            proofs.extend({"phase": "step1", **p} for p in s1.decision.as_json())
            phases["step1"] = {"admitted": s1.decision.admitted, "discard_reason": s1.decision.discard_reason,
                               "bundle_digest": b1.digest, "store_out_digest": s1.store_digest,
                               "store_files": len(s1.store or ()), "agent_ended": s1.transcript.ended}
            tokens = session_fields(s1)
            # A session 1 that ended badly (exit non-zero, timeout) still runs session 2 and is scored; a session 1
            # the gate discarded (the arm not attached, a fault outside the agent) discards the cell.
            if not s1.decision.admitted:
                return finish(**tokens)
            if s1.store is None:  # step 1 wrote its store past the cap: nothing to carry, so step 2 answers nothing
                phases["step2"] = {"skipped": "step 1 left a store over the cap"}
                scored, recalled = unit.score(ctx, cell, Transcript(agent=cell.agent, model=None))
                result = {**scored, "step1_ended": s1.transcript.ended, "step2_ended": None}
                write_json(cell_dir / "verdict.json", result)
                limit = next(e for e in s1.transcript.events if e["type"] == "resource_limit" and e["resource"] == "store")
                return finish(**tokens, checker_passed=recalled, checker_detail=f"step 2 not run: step 1 left a store over "
                              f"the cap of {limit['cap_mib']} MiB (at {limit['at']})",
                              outcome="recalled" if recalled else "not_recalled")
            saved = cell_dir / "step1" / "store.tar"
            saved.write_bytes(pack(list(s1.store)))
            if between is not None:
                between(cell_dir)
            # Only the saved store passes, and only if it is what step 1 left.
            raw = saved.read_bytes()
            carried = sha256_bytes(raw) == s1.store_digest
            carry = gate.GateProof("store_carried", carried, f"store {s1.store_digest[:12]} as step 1 left it" if carried
                                   else f"the saved store is {sha256_bytes(raw)[:12]}, step 1 left {s1.store_digest[:12]}")
            proofs.append({"phase": "between", **vars(carry)})
            row["store_digest"] = s1.store_digest
            if not carried:
                return finish(admitted=False, discard_reason=gate.STORE_DIGEST_MISMATCH)
            store = tuple(safe_entries(raw))
            # Step 2: a fresh container; the question, the arm, and the store.
            b2 = self.bundle(ctx, cell, "step2", unit.prompts[1], store)
            (cell_dir / "step2" / "bundle.manifest").write_text(b2.manifest)
            row["bundle_digest"] = b2.digest
            secrets = [*unit.secrets, str(cell_dir / "step1")]

            def scrubbed(sandbox) -> list[gate.GateProof]:
                return [env_proof(sandbox.exec(["env"], timeout=30, workdir="/").stdout, secrets)]

            ctx.check_cancel()
            s2 = run_phase(ctx, cell, PhaseSpec("step2", unit.prompts[1], b2, cell_dir / "step2",
                                                AGENT_SECONDS, unit.channels[1], export=None,
                                                pre_session=scrubbed, writes=True,
                                                model_script=unit.scripts[1]), attempt)
            wait_for_removals([s2.remover])
            proofs.extend({"phase": "step2", **p} for p in s2.decision.as_json())
            phases["step2"] = {"admitted": s2.decision.admitted, "discard_reason": s2.decision.discard_reason,
                               "bundle_digest": b2.digest, "store_in_digest": s1.store_digest,
                               "agent_ended": s2.transcript.ended}
            fields = session_fields(s2)
            for k in ("tokens_fresh_input", "tokens_cache_read", "tokens_cache_creation", "tokens_output", "cost_usd"):
                if tokens[k] is not None or fields[k] is not None:
                    fields[k] = (tokens[k] or 0) + (fields[k] or 0)
            fields["agent_ended"] = first_ending(s1.transcript.ended, s2.transcript.ended)
            if not s2.decision.admitted and s2.decision.discard_reason in STORE_FAULTS:
                # Whose failure: the arm's, or the store step 1's agent left? The same arm on the store step 1
                # started from tells them apart (a control: memgrid's reader in step 2's place).
                control = self.control_start(ctx, cell, unit, attempt, cell_dir)
                proofs.append({"phase": "control", **vars(control)})
                phases["control"] = {"arm_works_on_start_store": control.passed, "detail": control.detail}
                if control.passed:  # the store step 1 left is what the server could not start on: the agent's doing
                    scored, recalled = unit.score(ctx, cell, Transcript(agent=cell.agent, model=None))
                    result = {**scored, "step1_ended": s1.transcript.ended, "step2_ended": s2.transcript.ended,
                              "store_unreadable": True}
                    write_json(cell_dir / "verdict.json", result)
                    why = next((f"{p.name}: {p.detail}" for p in s2.decision.proofs if not p.passed), "")
                    return finish(**{**fields, "admitted": True, "discard_reason": None,
                                     "error_class": STORE_UNREADABLE,
                                     "error_detail": f"step 2's arm failed on the store step 1 left "
                                                     f"({s1.store_digest[:12]}): {why}; it starts on the store step 1 "
                                                     "began with"},
                                  checker_passed=recalled, outcome="not_recalled",
                                  checker_detail=f"{STORE_UNREADABLE}: step 2 could not read its memory")
            if not s2.decision.admitted:
                return finish(**fields)
            scored, recalled = unit.score(ctx, cell, s2.transcript)
            result = {**scored, "step1_ended": s1.transcript.ended, "step2_ended": s2.transcript.ended}
            write_json(cell_dir / "verdict.json", result)
            detail = (f"{scored['reason']}: {scored['last_line'][:200]}" if hosted is None
                      else f"score {scored['score']}: {scored['reason'][:200]}")
            return finish(**fields, checker_passed=recalled, checker_detail=detail,
                          outcome="recalled" if recalled else "not_recalled")
        except Exception as e:
            return finish(**cell_failure(ctx, e))

    def after_run(self, ctx: TrialContext, rows: list[dict], log=print) -> None:
        """A hosted suite's own grader over each agent x arm (grader.json in the run folder)."""
        if ctx.protocol_setup is not None:
            grade_run(ctx, ctx.protocol_setup, rows, log)

    def run_tables(self, run_dir) -> list[tuple[str, list[str], list[list[str]], str]]:
        path = Path(run_dir) / GRADER_FILE
        if not path.is_file():
            return []
        graded = json.loads(path.read_text())
        # its first few plain fields, in the order it prints them; everything it printed is in the file
        first = next((g["verdict"] for g in graded if g["verdict"]), {})
        keys = [k for k, v in first.items() if not isinstance(v, (dict, list))][:GRADER_COLUMNS]
        lines = [[g["agent"], g["arm"], str(g["cases"]),
                  *(json.dumps(g["verdict"].get(k)) if g["verdict"] else "no verdict" for k in keys)] for g in graded]
        return [("the task's own grader, per agent x arm", ["agent", "arm", "cases", *keys], lines,
                 f"its whole output for each group's admitted cells, unchanged: {path}")]

    def summary(self, rows: list[dict], planned: int | None = None) -> list[dict]:
        from statsmodels.stats.proportion import proportion_confint

        groups: dict[tuple[str, str], list[dict]] = {}
        for r in rows:
            groups.setdefault((r["agent"], r["arm"]), []).append(r)
        out = []
        for (agent, arm), rs in sorted(groups.items()):
            scored = [r for r in rs if r["admitted"]]
            k = sum(bool(r["checker_passed"]) for r in scored)
            lo, hi = proportion_confint(k, len(scored), method="wilson") if scored else (None, None)
            out.append({"agent": agent, "arm": arm, "cells": len(rs), "admitted": len(scored), "recalled": k,
                        "rate": k / len(scored) if scored else None, "wilson_low": lo, "wilson_high": hi})
        return out

    def summary_table(self, summary: list[dict]) -> tuple[list[str], list[list[str]]]:
        lines = [[r["agent"], r["arm"], str(r["cells"]), str(r["admitted"]), str(r["recalled"]),
                  "-" if r["rate"] is None else f"{r['rate']:.2f}",
                  "-" if r["rate"] is None else f"{r['wilson_low']:.2f}-{r['wilson_high']:.2f}"] for r in summary]
        return ["agent", "arm", "cells", "admitted", "recalled", "rate", "Wilson 95 %"], lines


def cases_of_cell(ctx: TrialContext, cell: CellSpec) -> casegen.Case:
    """A case by its id: generation is prefix-stable (case i is the same whatever the count), so the
    first i + 1 cases hold it."""
    return cases_of(int(cell.task.removeprefix("ts-")) + 1)[cell.task]
