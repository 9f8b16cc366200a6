"""The planted protocol's analysis: pass rate per condition, the Memory Utility Index v2, per-lane ablation
deltas, the injection-confirmation rate and the surface-echo rate, per agent x arm.

Memory Utility Index v2 (SMRITI-Bench's definition, its scorer.py): each admitted `on` run is paired with the
admitted `off` runs of the same task and trial (seed), or with every off run of the task when that trial has none.
It earns a credit only if injection was confirmed, it passed, and pairs exist: a success lift if any paired
off run failed, otherwise a cost saving if a paired off run used at least COST_RATIO times its tokens, counted
as SMRITI counts them (fresh input + output: `smriti_tokens`). The two are exclusive. MUI = credits / on runs,
with a Wilson 95 % interval. Only admitted cells count; a discarded cell is never scored. Ablation deltas are
SMRITI's (on minus each ablated condition, `all` included) beside its wiring check (ablate:all minus off), and
every figure is also given per split (SMRITI's per_split). One difference, said in the report: a run whose tokens
were not observed (an LLM-free agent) earns no cost credit here, where SMRITI's scorer reads its tokens as 0.
"""

import json

from statsmodels.stats.proportion import proportion_confint

COST_RATIO = 1.5
Z95 = 0.05  # alpha for the Wilson intervals (z = 1.96)


def _result(row: dict) -> dict:
    return json.loads(row["result"]) if row.get("result") else {}


def wilson(k: int, n: int) -> tuple[float | None, float | None]:
    if n == 0:
        return None, None
    lo, hi = proportion_confint(k, n, alpha=Z95, method="wilson")
    return float(lo), float(hi)


def rate(rows: list[dict]) -> dict:
    k, n = sum(bool(r["checker_passed"]) for r in rows), len(rows)
    lo, hi = wilson(k, n)
    return {"passed": k, "admitted": n, "rate": k / n if n else None, "wilson_low": lo, "wilson_high": hi}


def smriti_tokens(row: dict) -> int | None:
    """A run's tokens as SMRITI counts them (its ClaudeCodeAdapter: uncached input + output); None: not observed."""
    parts = [row.get("tokens_fresh_input"), row.get("tokens_output")]
    return None if all(p is None for p in parts) else sum(p or 0 for p in parts)


def mui(on_runs: list[dict], off_runs: list[dict]) -> dict:
    """The index over one agent x arm's admitted on and off runs (ledger rows with their result)."""
    lift = cost = 0
    for on in on_runs:
        same = [o for o in off_runs if o["task"] == on["task"] and o["seed"] == on["seed"]]
        pairs = same or [o for o in off_runs if o["task"] == on["task"]]
        if not pairs or not on["checker_passed"] or not _result(on).get("injection", {}).get("confirmed"):
            continue
        if any(not o["checker_passed"] for o in pairs):
            lift += 1
            continue
        tokens = smriti_tokens(on)
        if tokens is not None and any((t := smriti_tokens(o)) is not None and t >= COST_RATIO * tokens for o in pairs):
            cost += 1
    n = len(on_runs)
    lo, hi = wilson(lift + cost, n)
    return {"lift_credits": lift, "cost_credits": cost, "on_runs": n, "mui": (lift + cost) / n if n else None,
            "wilson_low": lo, "wilson_high": hi}


def condition_order(condition: str) -> tuple[int, str]:
    """off, on, each lane ablated, every lane ablated: the order the table and the plot read in."""
    return ({"off": 0, "on": 1, "ablate:all": 3}.get(condition, 2), condition)


def figures(admitted: list[dict]) -> dict:
    """SMRITI's figures over some admitted runs: per condition, ΔSR and ΔT (on minus off), MUI, lane deltas, the gap."""
    by_condition = {}
    for r in admitted:
        by_condition.setdefault(r["condition"], []).append(r)
    rates = {c: rate(by_condition[c]) for c in sorted(by_condition, key=condition_order)}
    on, off = by_condition.get("on", []), by_condition.get("off", [])
    sr = {c: v["rate"] for c, v in rates.items()}
    tokens = {c: [smriti_tokens(r) for r in rs] for c, rs in by_condition.items()}
    mean_tokens = {c: sum(t) / len(t) if t and None not in t else None for c, t in tokens.items()}
    both = on and off
    return {"conditions": rates, "mui": mui(on, off),
            "delta_sr": sr["on"] - sr["off"] if both else None,
            "delta_tokens": (mean_tokens["on"] - mean_tokens["off"]) if both and None not in (mean_tokens["on"],
                                                                                              mean_tokens["off"]) else None,
            "lane_deltas": {c.removeprefix("ablate:"): sr["on"] - sr[c] for c in sr if c.startswith("ablate:") and on},
            "ablate_all_minus_off": (sr["ablate:all"] - sr["off"]) if "ablate:all" in sr and off else None}


def summarise(rows: list[dict]) -> list[dict]:
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["agent"], r["arm"]), []).append(r)
    out = []
    for (agent, arm), rs in sorted(groups.items()):
        admitted = [r for r in rs if r["admitted"]]
        whole = figures(admitted)
        on = [r for r in admitted if r["condition"] == "on"]
        confirmed = sum(bool(_result(r).get("injection", {}).get("confirmed")) for r in on)
        by_split: dict[str, list[dict]] = {"visible": [], "holdout": []}  # SMRITI reports both, even when empty
        for r in admitted:
            by_split.setdefault(_result(r).get("split", "unknown"), []).append(r)
        # None: not tried (the session's store was over the cap, the agent's doing): neither kept nor left behind
        forgotten = [f for f in (_result(r).get("forgotten", {}).get("ok") for r in admitted) if f is not None]
        flags = []
        if on and confirmed == 0:
            flags.append("injection never confirmed: no planted memory reached a session (a namespace the arm "
                         "silently replaced?); its pass rates measure no memory")
        if around := sum(bool(_result(r).get("injection", {}).get("read_around_the_arm")) for r in admitted):
            flags.append(f"{around} runs read a planted memory around the arm first (a shell or a file read of its "
                         "store): scored as they ran, never credited to the arm")
        if any(f is False for f in forgotten):
            flags.append(f"{sum(f is False for f in forgotten)} cells left planted memories behind after forget")
        out.append({
            "agent": agent, "arm": arm, "cells": len(rs), "admitted": len(admitted), **whole,
            "splits": {name: figures(split_rows) for name, split_rows in sorted(by_split.items())},
            "injection_confirmed": confirmed, "on_runs": len(on), "confirmation_rate": confirmed / len(on) if on else None,
            "surface_echo_rate": (sum(bool(_result(r).get("echo")) for r in on) / len(on)) if on else None,
            "forgotten_all": all(f is True for f in forgotten) if forgotten else None, "flags": flags})
    return out


def _interval(d: dict, key: str) -> str:
    return "-" if d.get(key) is None else f"{d[key]:.2f} [{d['wilson_low']:.2f}, {d['wilson_high']:.2f}]"


def table(summary: list[dict]) -> tuple[list[str], list[list[str]]]:
    """One row per agent x arm x condition; the arm's MUI, confirmation and lane figures on its `on` row."""
    columns = ["agent", "arm", "condition", "passed", "rate [95 % CI]", "MUI [95 % CI]", "confirmed", "lane delta",
               "echo"]
    lines = []
    for r in summary:
        for c, v in r["conditions"].items():
            on = c == "on"
            lane = c.removeprefix("ablate:")
            delta = f"{r['lane_deltas'][lane]:+.2f}" if c.startswith("ablate:") and lane in r["lane_deltas"] else ""
            if c == "ablate:all" and r["ablate_all_minus_off"] is not None:  # SMRITI's wiring check beside it
                delta = (delta + " " if delta else "") + f"(vs off {r['ablate_all_minus_off']:+.2f})"
            lines.append([r["agent"], r["arm"], c, f"{v['passed']}/{v['admitted']}", _interval(v, "rate"),
                          _interval(r["mui"], "mui") if on else "",
                          f"{r['injection_confirmed']}/{r['on_runs']}" if on else "", delta,
                          f"{r['surface_echo_rate']:.2f}" if on and r["surface_echo_rate"] is not None else ""])
    return columns, lines


SPLIT_NOTE = ("As SMRITI's scorer.py, per split (its per_split: visible, holdout, and any other a task was recorded "
              "in): rates with Wilson 95 % intervals, MUI v2 (pairs by task and trial; the 1.5x cost rule on tokens "
              "counted as SMRITI counts them, fresh input + output), ΔSR and ΔT (on minus off; ΔT blank when tokens "
              "were not observed), and on minus each ablated condition. One difference: a run whose tokens were not "
              "observed earns no cost credit here; SMRITI's scorer reads its tokens as 0.")


def split_table(summary: list[dict]) -> tuple[list[str], list[list[str]]]:
    columns = ["agent", "arm", "split", "condition", "passed", "rate [95 % CI]", "MUI (lift + cost)", "ΔSR", "ΔT",
               "on minus"]
    lines = []
    for r in summary:
        for name, f in r["splits"].items():
            for c, v in f["conditions"].items():
                on = c == "on"
                m = f["mui"]
                lines.append([r["agent"], r["arm"], name, c, f"{v['passed']}/{v['admitted']}", _interval(v, "rate"),
                              f"{m['mui']:.2f} ({m['lift_credits']} + {m['cost_credits']})"
                              if on and m["mui"] is not None else "",
                              f"{f['delta_sr']:+.2f}" if on and f["delta_sr"] is not None else "",
                              f"{f['delta_tokens']:+.0f}" if on and f["delta_tokens"] is not None else "",
                              f"{f['lane_deltas'][c.removeprefix('ablate:')]:+.2f}" if c.startswith("ablate:") else ""])
    return columns, lines
