"""The two-session stub agents, run as the sandbox runs them (`python3 -I script`), judged on their stdout.

Each case is two subprocesses: step 1 with its prompt file, a store and a working folder; then step 1's
folder is deleted, and step 2 runs with a fresh prompt folder and working folder and only the store
carried over. The floors must score 0 and the ceiling 1; the env_scan and snoop controls leak step 1
on purpose and must score 1, which shows those floors would have caught a leak.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from runner.protocols.two_session import cases as C
from runner.protocols.two_session.judge import judge

STUBS = Path(C.__file__).parent / "stubs"
CASES = C.generate_cases(40)
FEW = CASES[:10]  # the env/snoop floors and the leak controls: each session is a ~50 ms interpreter start


def run_stub(stub, phase, prompt, folder: Path, store: Path | None, env_extra=None) -> str:
    (folder / "cwd").mkdir(parents=True)
    prompt_file = folder / f"{phase}.md"
    prompt_file.write_text(prompt)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMGRID_")}
    env.update(MEMGRID_PHASE=phase, MEMGRID_PROMPT_FILE=str(prompt_file), **(env_extra or {}))
    if store is not None:
        env["MEMGRID_STORE"] = str(store)
    p = subprocess.run([sys.executable, "-I", str(STUBS / f"{stub}.py")], input=prompt, capture_output=True,
                       text=True, cwd=folder / "cwd", env=env, timeout=60)
    assert p.returncode == 0, f"{stub} {phase} exited {p.returncode}: {p.stderr}"
    return p.stdout


def two_sessions(stub, case, root: Path, *, with_store=True, leak=None, step2_env=None):
    """Step 1 then step 2 of `case`; `leak(root, step1_prompt)` may plant step 1 for step 2 to find."""
    root.mkdir(parents=True)
    store = root / "store" if with_store else None
    if store:
        store.mkdir()
    run_stub(stub, "step1", C.step1_prompt(case), root / "s1", store)
    shutil.rmtree(root / "s1")  # step 2 is a fresh sandbox: nothing of step 1 but the store
    env = dict(step2_env or {})
    if leak:
        env.update(leak(root, C.step1_prompt(case)) or {})
    out = run_stub(stub, "step2", C.step2_prompt(case), root / "s2", store, env)
    return judge(out, C.answer(case)), out


def score(stub, tmp_path, cases=CASES, **kw):
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda ic: two_sessions(stub, ic[1], tmp_path / f"{stub}-{ic[0]}", **kw),
                                enumerate(cases)))
    total = sum(v.score for v, _ in results)
    print(f"{stub}: {total}/{len(cases)}", {v.reason for v, _ in results})
    return total, results


def test_ceiling_scores_every_case(tmp_path):
    total, results = score("ceiling", tmp_path)
    assert total == len(CASES), [(c.id, v, out) for c, (v, out) in zip(CASES, results) if not v.score]
    assert {v.reason for v, _ in results} == {"exact"}


def test_ceiling_without_a_store_remembers_nothing(tmp_path):
    total, results = score("ceiling", tmp_path, cases=CASES[:3], with_store=False)
    assert total == 0 and {v.reason for v, _ in results} == {"unknown"}


def _ledgerlib():
    spec = importlib.util.spec_from_file_location("two_session_ledgerlib", STUBS / "ledgerlib.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_ledgerlib_agrees_with_the_gold_on_200_cases():
    lib = _ledgerlib()
    for c in C.generate_cases(200):
        p1 = C.step1_prompt(c)
        key = lib.find_key(p1)
        assert key == C.key(c) == lib.find_key(C.step2_prompt(c))
        assert lib.compute(key, lib.parse_table(p1)) == C.answer(c), c


@pytest.mark.parametrize("stub", ["unknown", "confabulate", "shotgun"])
def test_floors_score_zero(stub, tmp_path):
    total, results = score(stub, tmp_path)
    assert total == 0, [(c.id, v) for c, (v, _) in zip(CASES, results) if v.score]
    if stub == "unknown":
        assert {v.reason for v, _ in results} == {"unknown"}
    if stub == "shotgun":  # it did remember: every voucher answer was on its line, refused as a shotgun
        voucher_cases = [v for c, (v, _) in zip(CASES, results) if c.derivation not in C.MONEY_DERIVATIONS]
        assert voucher_cases and {v.reason for v in voucher_cases} == {"shotgun"}
    if stub == "confabulate":  # an answer of the right shape each time, just not the gold
        assert {v.reason for v, _ in results} == {"wrong"}


def test_env_scan_finds_nothing_on_a_clean_step2(tmp_path):
    total, results = score("env_scan", tmp_path, cases=FEW)
    assert total == 0 and {v.reason for v, _ in results} == {"unknown"}
    assert "environment variables" in results[0][1]


def test_env_scan_catches_a_leaked_path_or_value(tmp_path):
    def path_leak(root, step1):
        (root / "kept").mkdir()
        (root / "kept" / "prompt.md").write_text(step1)
        return {"INNOCENT_LOOKING_NAME": f"/nonexistent{os.pathsep}{root / 'kept' / 'prompt.md'}"}

    total, _ = score("env_scan", tmp_path / "path", cases=CASES[:5], leak=path_leak)
    assert total == 5
    total, _ = score("env_scan", tmp_path / "value", cases=CASES[5:8], leak=lambda r, s: {"LEDGER_DUMP": s})
    assert total == 3


def test_snoop_finds_nothing_on_a_clean_step2(tmp_path):
    def empty_root(root, step1):
        (root / "roots").mkdir()
        return {"MEMGRID_SNOOP_ROOTS": str(root / "roots")}

    total, results = score("snoop", tmp_path, cases=FEW, leak=empty_root)
    assert total == 0 and {v.reason for v, _ in results} == {"unknown"}


def test_snoop_catches_step1_left_on_disk(tmp_path):
    def in_a_root(root, step1):
        (root / "roots" / "deep" / "er").mkdir(parents=True)
        (root / "roots" / "deep" / "er" / "old-step1.md").write_text(step1)
        return {"MEMGRID_SNOOP_ROOTS": str(root / "roots")}

    def beside_the_workspace(root, step1):
        (root / "roots").mkdir()
        (root / "s2").mkdir()  # cwd's parent
        (root / "s2" / "left-over.md").write_text(step1)
        return {"MEMGRID_SNOOP_ROOTS": str(root / "roots")}

    total, _ = score("snoop", tmp_path / "root", cases=CASES[:5], leak=in_a_root)
    assert total == 5
    total, _ = score("snoop", tmp_path / "parent", cases=CASES[5:8], leak=beside_the_workspace)
    assert total == 3
