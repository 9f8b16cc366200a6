"""A planted run in SMRITI's results JSONL (runner/sources/smriti_export.py): a file per agent x arm, a record per
final admitted cell in its runner's fields, tokens_used counted as SMRITI counts it (fresh input + output),
injected_confirmed None under off, discarded cells left out, and another run's file never replaced."""

import json

import pytest

from runner.errors import UserError
from runner.sources.registry import export_format

from conftest import REPO
from test_memora_export import export
from synthetic_ledger import cell, write_run

TASK = "pl_cart_prices"  # a planted task of this checkout: its memories are the records' planted_memory_contents


def planted(condition: str, passed: bool | None, seed: int = 0, agent: str = "claude-code", **extra):
    result = {"split": "visible", "split_sha256": "s" * 64, "echo": False,
              "injection": {"confirmed": condition != "off"}}
    return cell(TASK, "recall", passed, seed=seed, condition=condition, agent=agent, protocol="planted",
                result=json.dumps(result), **extra)


def test_export_writes_smritis_records_per_agent_and_arm(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMGRID_ROOT", str(REPO))
    rows = [planted("on", True, tokens_fresh_input=100, tokens_output=20, tokens_cache_read=5000,
                    tokens_cache_creation=700, model="scripted"),
            planted("off", False, tokens_fresh_input=300, tokens_output=40),
            planted("on", True, seed=1, agent="reader"),
            planted("on", None, seed=1, admitted=False)]
    run = write_run(tmp_path / "run1", rows, {"name": "p", "protocol": "planted", "tasks": [TASK], "arms": ["recall"],
                                             "agents": ["claude-code", "reader"], "seeds": 2, "conditions": ["off", "on"]})
    printed = export(run, tmp_path / "out", "smriti").output  # a record per cell, not per file
    assert f"wrote 3 records in 2 files under {tmp_path / 'out'}, left out 1 cells" in " ".join(printed.split()), printed
    result = export_format("smriti").export(run, tmp_path / "out")
    assert sorted(p.name for p in result.written) == ["claude-code__recall.jsonl", "reader__recall.jsonl"]
    assert list(result.skipped.values()) == ["mcp_not_connected"]
    records = [json.loads(line) for line in (tmp_path / "out/claude-code__recall.jsonl").read_text().splitlines()]
    on = next(r for r in records if r["condition"] == "on")
    assert (on["tokens_used"], on["input_tokens"], on["output_tokens"], on["cache_read_tokens"]) == (120, 100, 20, 5000)
    assert on["injected_confirmed"] is True and on["passed"] is True and on["trial"] == 0 and on["task_id"] == TASK
    assert on["split"] == "visible" and on["split_hash"] == "s" * 64 and on["planted_memory_contents"]
    assert on["memgrid"]["model"] == "scripted"  # the model the cell ran on (a grid of several: agent@model files)
    off = next(r for r in records if r["condition"] == "off")
    assert off["injected_confirmed"] is None and off["passed"] is False and off["tokens_used"] == 340
    reader = json.loads((tmp_path / "out/reader__recall.jsonl").read_text())
    assert reader["tokens_used"] == 0 and reader["memgrid"]["tokens_observed"] is False
    assert export_format("smriti").export(run, tmp_path / "out").written  # its own files: written again
    other = write_run(tmp_path / "run2", rows[:1], {"name": "p", "protocol": "planted", "tasks": [TASK],
                                                    "arms": ["recall"], "agents": ["claude-code"], "seeds": 1,
                                                    "conditions": ["on"]})
    with pytest.raises(UserError, match="was not written by an export of run run2"):
        export_format("smriti").export(other, tmp_path / "out")
