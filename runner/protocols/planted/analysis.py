"""The planted protocol's analysis: pass rate per condition, the Memory Utility Index v2, per-lane ablation
deltas, the injection-confirmation rate and the surface-echo rate, per agent x arm.

Memory Utility Index v2 (SMRITI-Bench's definition): each admitted `on` run is paired with the admitted
`off` runs of the same task and trial (seed), or with every off run of the task when that trial has none.
It earns a credit only if injection was confirmed, it passed, and pairs exist: a success lift if any paired
off run failed, otherwise a cost saving if a paired off run used at least COST_RATIO times its tokens. The
two are exclusive. MUI = credits / on runs, with a Wilson 95 % interval. Only admitted cells count; a
discarded cell is never scored.
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
        tokens = _result(on).get("tokens_total")
        if tokens and any((_result(o).get("tokens_total") or 0) >= COST_RATIO * tokens for o in pairs):
            cost += 1
    n = len(on_runs)
    lo, hi = wilson(lift + cost, n)
    return {"lift_credits": lift, "cost_credits": cost, "on_runs": n, "mui": (lift + cost) / n if n else None,
            "wilson_low": lo, "wilson_high": hi}


def condition_order(condition: str) -> tuple[int, str]:
    """off, on, each lane ablated, every lane ablated: the order the table and the plot read in."""
    return ({"off": 0, "on": 1, "ablate:all": 3}.get(condition, 2), condition)


def summarise(rows: list[dict]) -> list[dict]:
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["agent"], r["arm"]), []).append(r)
    out = []
    for (agent, arm), rs in sorted(groups.items()):
        admitted = [r for r in rs if r["admitted"]]
        by_condition = {}
        for r in admitted:
            by_condition.setdefault(r["condition"], []).append(r)
        rates = {c: rate(by_condition[c]) for c in sorted(by_condition, key=condition_order)}
        on, off = by_condition.get("on", []), by_condition.get("off", [])
        confirmed = sum(bool(_result(r).get("injection", {}).get("confirmed")) for r in on)
        sr = {c: v["rate"] for c, v in rates.items()}
        deltas = {c.removeprefix("ablate:"): sr["on"] - sr[c] for c in sr
                  if c.startswith("ablate:") and c != "ablate:all" and sr.get("on") is not None and sr[c] is not None}
        gap = (sr["ablate:all"] - sr["off"]) if sr.get("ablate:all") is not None and sr.get("off") is not None else None
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
            "agent": agent, "arm": arm, "cells": len(rs), "admitted": len(admitted), "conditions": rates,
            "mui": mui(on, off), "injection_confirmed": confirmed, "on_runs": len(on),
            "confirmation_rate": confirmed / len(on) if on else None, "lane_deltas": deltas, "ablate_all_minus_off": gap,
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
            delta = (f"{r['lane_deltas'][lane]:+.2f}" if lane in r["lane_deltas"] else
                     f"{r['ablate_all_minus_off']:+.2f} vs off" if c == "ablate:all" and r["ablate_all_minus_off"] is not None
                     else "")
            lines.append([r["agent"], r["arm"], c, f"{v['passed']}/{v['admitted']}", _interval(v, "rate"),
                          _interval(r["mui"], "mui") if on else "",
                          f"{r['injection_confirmed']}/{r['on_runs']}" if on else "", delta,
                          f"{r['surface_echo_rate']:.2f}" if on and r["surface_echo_rate"] is not None else ""])
    return columns, lines
