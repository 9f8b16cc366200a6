"""The personal protocol's figures: per agent x arm x horizon, mean FAMA (with a bootstrap interval over
persons), MPA, FAA and λ, per question kind, the search's violations and how often the records stating
the current facts reached the answer; FAMA laid out as Memora's Table 3. Published FAMA rows (Memora, remembering
questions) are printed beside them, with what is and is not alike (generated persons, or Memora's own hosted)."""

import json
import statistics
from dataclasses import asdict

from runner.protocols.personal.corpus import HORIZONS
from runner.protocols.personal.metrics import mean_with_interval
from runner.sources.registry import own_scoring, published_own, published_rows, reward_mapping

KINDS = ("remembering", "reasoning", "recommending")  # Memora's tasks, as memgrid's generated persons have them too
NOT_COMPARABLE = ("Not directly comparable: the published rows answer Memora's own questions over its own "
                  "conversations with an LLM answerer and LLM judges; memgrid's rows answer its generated "
                  "persons with each row's agent (the LLM-free reader, or a submission's own answerer) and "
                  "deterministic judges, so they rank arms on this corpus only.")
HOSTED_NOTE = ("Same data and questions: memgrid's rows answer Memora's own questions over its own conversations "
               "(suite {suites}, imported unchanged). They differ from the published rows in the answerer (each "
               "row's agent), the judges (the panel this run names) and the memory systems (each row's arm).")
TABLE3_NOTE = ("As Memora's Table 3 (its evals/model_eval/aggregate_results.py): per arm, task and period, each "
               "person's mean per-question FAMA over the questions of that task, then the mean over the persons "
               "with such questions, x 100.")


def comparability(summary: list[dict]) -> str:
    """What the published rows can be set beside: memgrid's generated persons, or Memora's own as hosted."""
    suites = sorted({s["suite"] for s in summary if s.get("suite")})
    return HOSTED_NOTE.format(suites=", ".join(suites)) if suites else NOT_COMPARABLE


def ordered_kinds(asked: set[str]) -> list[str]:
    """Question kinds as the tables show them: Memora's three tasks (every one, in their order) when the questions
    are of those, else a hosted benchmark's own (LoCoMo's numbered categories) in their order. No questions (a group
    whose every cell was discarded): no kinds, so that it adds no Memora columns to another benchmark's tables."""
    return list(KINDS) if asked and asked <= set(KINDS) else sorted(asked)


def kinds_of(summary: list[dict]) -> list[str]:
    """The question kinds the run's units have."""
    return ordered_kinds({k for s in summary for k in s["by_kind"]})


def memora_shaped(summary: list[dict]) -> bool:
    """Whether the run's questions are Memora's tasks (Memora hosted, or memgrid's generated persons): then its
    Table 3 and its published rows are the layout to read it by."""
    return set(kinds_of(summary)) <= set(KINDS)


def person_first(questions: list[tuple[str, dict]], kind: str) -> float | None:
    """One Table 3 cell: each person's mean FAMA over its questions of `kind`, then the mean over those persons."""
    by_person: dict[str, list[float]] = {}
    for person, q in questions:
        if q["kind"] == kind:
            by_person.setdefault(person, []).append(q["fama"])
    return _mean([_mean(v) for v in by_person.values()])


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarise(rows: list[dict], planned: int | None = None) -> list[dict]:
    """Per agent x arm x horizon, over the run's final rows; `planned`: the cells the run's lock plans (a run that
    has not finished them all is partial, and no row of it earns a reward)."""
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["agent"], r["arm"], r["condition"]), []).append(r)
    order = {h: i for i, h in enumerate(HORIZONS)}
    out = []
    for (agent, arm, horizon), rs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], order.get(kv[0][2], 9))):
        scored = [r for r in rs if r["admitted"] and r.get("result")]
        results = [json.loads(r["result"]) for r in scored]
        questions = [(r["task"], q) for r, res in zip(scored, results) for q in res["questions"]]
        kinds = ordered_kinds({q["kind"] for _, q in questions})
        modelled = [q for res in results if res.get("panel") == "model" for q in res["questions"]]
        hosted_format = next((res["format"] for res in results if res.get("format")), None)
        by_person: dict[str, list[float]] = {}
        for person, q in questions:
            by_person.setdefault(person, []).append(q["fama"])
        fama, low, high = mean_with_interval(by_person)
        out.append({
            "agent": agent, "arm": arm, "horizon": horizon, "cells": len(rs), "admitted": len(scored),
            "questions": len(questions), "fama": fama, "fama_low": low, "fama_high": high,
            "mpa": _mean([q["mpa"] for _, q in questions]), "faa": _mean([q["faa"] for _, q in questions]),
            "lambda": _mean([q["lam"] for _, q in questions]),
            "by_kind": {k: _mean([q["fama"] for _, q in questions if q["kind"] == k]) for k in kinds},
            "table3": {k: person_first(questions, k) for k in kinds},
            "suite": next((res["suite"] for res in results if res.get("suite")), None),
            "format": hosted_format,
            "violations": sum(q["violations"] for _, q in questions),
            "own_scores": own_scores([q for _, q in questions], own_scoring(hosted_format)[0]),
            "judge_sensitivity": judge_sensitivity([q for _, q in questions]),
            "evidence_recall": _mean([q["evidence_released"] / q["evidence"] for _, q in questions if q["evidence"]]),
            **evidence_split([q for _, q in questions]),
            **stores_of([res["store"] for res in results if res.get("store")]),
            "contract": contract_of([res["contract"] for res in results if res.get("contract")]),
            "invalid_judgements": sum(q.get("invalid_judgements", 0) for _, q in questions),
            "panel": "model" if modelled else "deterministic",
            "judges": sorted({", ".join(res.get("judges", ())) for res in results}),
            # Where a model panel decided: the share of criteria the deterministic panel judged the same way.
            "agreement": agreement_of(modelled),
            "flags": flags_of([q for _, q in questions]),
            **reward_of(rs, results, fama, partial_run(len(rows), planned)),
        })
    return out


OWN_RECALL = "evidence recall"  # the row of the benchmark's own evidence recall (SourceFormat.evidence_recall)


def own_scores(questions: list[dict], pools: dict[str, tuple[str, ...]]) -> dict[str, dict]:
    """The hosted benchmark's own per-question scores (LoCoMo's F1) and its own evidence recall, each a mean per
    question kind and over each of the format's pools of kinds (each question counted once: LoCoMo's overall), and
    each answer score split as FAMA is: among the questions whose memory evidence the search returned whole
    ("whole") and the rest ("part")."""
    values = {n: [(q["kind"], q["own"][n], q) for q in questions if n in q.get("own", {})]
              for n in sorted({n for q in questions for n in q.get("own", {})})}
    for prompt in dict.fromkeys(p for q in questions for p in q.get("own_judged", {})):
        values[f"J ({prompt})"] = [(q["kind"], q["own_judged"][prompt], q) for q in questions
                                   if prompt in q.get("own_judged", {})]
    if any("own_recall" in q for q in questions):
        values[OWN_RECALL] = [(q["kind"], q["own_recall"], q) for q in questions if "own_recall" in q]
    out = {}
    for name, scored in values.items():
        kinds = {k for k, _, _ in scored}
        by = {k: _mean([v for kind, v, _ in scored if kind == k]) for k in ordered_kinds(kinds)}
        pooled = {label: _mean([v for kind, v, _ in scored if kind in members]) for label, members in pools.items()}
        split = {} if name == OWN_RECALL else {
            "whole": _mean([v for _, v, q in scored if q["evidence"] and q["evidence_released"] == q["evidence"]]),
            "part": _mean([v for _, v, q in scored if q["evidence"] and q["evidence_released"] < q["evidence"]])}
        out[name] = {"by_kind": by, "pooled": pooled, **split}
    return out


OWN_NOTE = ("The benchmark's own score of each answer and of what the search released, as its own scorer computes "
            "them, a mean per question kind and over the benchmark's pools of kinds; the judges' FAMA above is "
            "memgrid's, beside it. 'whole' / 'part': the answer score among the questions whose memory evidence the "
            "search returned whole (any loss is the answerer's) and among the rest (the gap is retrieval's).")


def judge_sensitivity(questions: list[dict]) -> dict:
    """The same answers under each published answer prompt: its J, the benchmark's own F1 among the answers it
    labelled CORRECT and among those it labelled WRONG (a lenient prompt passes answers of low F1), and how often the
    first two prompts gave the same label (a question's label: CORRECT when most of its models said so)."""
    judged = [q for q in questions if q.get("own_judged")]
    prompts = list(dict.fromkeys(p for q in judged for p in q["own_judged"]))
    f1 = lambda qs: _mean([q["own"]["f1"] for q in qs if "f1" in q.get("own", {})])
    out = {"prompts": {p: {"questions": sum(p in q["own_judged"] for q in judged),
                           "j": _mean([q["own_judged"][p] for q in judged if p in q["own_judged"]]),
                           "f1_correct": f1([q for q in judged if q["own_judged"].get(p, -1) > 0.5]),
                           "f1_wrong": f1([q for q in judged if 0 <= q["own_judged"].get(p, -1) <= 0.5])}
                       for p in prompts}}
    if len(prompts) >= 2:
        both = [q for q in judged if prompts[0] in q["own_judged"] and prompts[1] in q["own_judged"]]
        out["agree"] = _mean([float((q["own_judged"][prompts[0]] > 0.5) == (q["own_judged"][prompts[1]] > 0.5))
                              for q in both])
    return out


def sensitivity_table(summary: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Per agent x arm x condition and answer prompt: J, F1 where it said CORRECT and where WRONG, and the first two
    prompts' agreement."""
    lines = [[s["agent"], s["arm"], s["horizon"], prompt, str(p["questions"]), _f(p["j"]), _f(p["f1_correct"]),
              _f(p["f1_wrong"]), _f(s["judge_sensitivity"].get("agree"))]
             for s in summary for prompt, p in s.get("judge_sensitivity", {}).get("prompts", {}).items()]
    return ["agent", "arm", "horizon", "prompt", "qs", "J", "F1 | CORRECT", "F1 | WRONG", "prompts agree"], lines


SENSITIVITY_NOTE = ("The same answers labelled by each published answer prompt (the grid's model judges, each prompt "
                    "as published): J is the share labelled CORRECT; F1 | CORRECT and F1 | WRONG are the benchmark's "
                    "own F1 among the answers so labelled (a prompt that passes answers of low F1 is lenient); 'prompts "
                    "agree' is the share of questions the first two prompts labelled alike. The prompts, their sources "
                    "and sha256 are under Judges.")


def published_own_table(summary: list[dict]) -> tuple[list[str], list[list[str]], str]:
    """The hosted benchmark's published figures of one of its own scores, then each arm's in this run (x 100), and
    why they are not alike; no lines when the format published none or the run has no such score."""
    figures, which, note = published_own(next((s["format"] for s in summary if s.get("format")), None))
    columns = ["system", f"{which[0]} {which[1]} %" if which else "%", "source"]
    ours = [[s["arm"], f"{100 * value:.2f}", f"memgrid, this run ({s['agent']}, {s['horizon']})"] for s in summary
            if which and (value := s.get("own_scores", {}).get(which[0], {}).get("pooled", {}).get(which[1])) is not None]
    if not figures or not ours:
        return columns, [], note
    return columns, [[name, f"{value:.2f}", source] for name, (value, source) in figures.items()] + ours, note


def own_note(summary: list[dict]) -> str:
    about = own_scoring(next((s["format"] for s in summary if s.get("format")), None))[1]
    return f"{OWN_NOTE} {about}".strip()


def own_table(summary: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Per agent x arm x condition and score: the benchmark's own score per question kind, pooled, and split by
    whether the question's memory evidence was all returned."""
    scores = [(s, name, score) for s in summary for name, score in s.get("own_scores", {}).items()]
    kinds = ordered_kinds({k for _, _, score in scores for k in score["by_kind"]})
    pools = list(dict.fromkeys(p for _, _, score in scores for p in score["pooled"]))
    lines = [[s["agent"], s["arm"], s["horizon"], name, *(_f(score["by_kind"].get(k)) for k in kinds),
              *(_f(score["pooled"].get(p)) for p in pools),
              *((_f(score["whole"]), _f(score["part"])) if "whole" in score else ("", ""))]
             for s, name, score in scores]
    return ["agent", "arm", "horizon", "score", *kinds, *pools, "whole", "part"], lines


def partial_run(finished: int, planned: int | None) -> str | None:
    return None if planned is None or finished >= planned else f"partial run: {finished} of {planned} cells finished"


def invalid_measurement(cells: list[dict], results: list[dict], partial: str | None) -> str | None:
    """Why a row's measurement is not valid, the one place that says it (None: valid). A hosted benchmark's card puts
    correctness and audit first: a run not finished, a cell not scored (discarded, or it failed), a model judge's
    verdict lost to transport or a malformed reply, or a sub-question no strict majority of valid verdicts decided
    (the deterministic judges give none for a sub-question that names no value) leaves no valid measurement. A
    submission's breaches of its contract are none of these: each is scored as the submission left things (an id
    dropped, an answer judged empty), so it lowers the quality and never voids it."""
    reasons = [partial] if partial else []
    unscored = sum(not (r["admitted"] and r.get("result")) for r in cells)
    if unscored:
        reasons.append(f"{unscored} of {len(cells)} cells not scored (discarded or failed)")
    questions = [q for res in results for q in res["questions"]]
    failed = sum(q.get("invalid_judgements", 0) for res in results if res.get("panel") == "model" for q in res["questions"])
    if failed:
        reasons.append(f"{failed} judge verdicts lost (transport failure or malformed reply)")
    if any("undecided" not in q for q in questions):
        reasons.append("its cells do not record whether each sub-question had a majority (judged by an older memgrid)")
    elif undecided := sum(q["undecided"] for q in questions):
        reasons.append(f"{undecided} sub-questions without a strict majority of valid verdicts")
    return "; ".join(reasons) or None


def reward_of(cells: list[dict], results: list[dict], quality: float | None, partial: str | None) -> dict:
    """The row's reward as its hosted benchmark's card defines it over raw quality (mean FAMA), when the card defines
    one; {} for memgrid's own persons."""
    mapping = reward_mapping(next((res.get("format") for res in results if res.get("format")), None))
    if mapping is None:
        return {}
    return {"reward": {**asdict(mapping.of(quality, invalid_measurement(cells, results, partial))),
                       "reference": mapping.reference, "anchor": mapping.anchor}}


def reward_table(summary: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Per agent x arm x horizon of a hosted suite whose card defines a reward: raw quality, reward, displayed score."""
    lines = [[s["agent"], s["arm"], s["horizon"], _f(r["quality"], 4), "-" if r["reward"] is None else f"{r['reward']:.6f}",
              "-" if r["score"] is None else f"{r['score']:.1f}", "-" if r["invalid"] is None else f"invalid: {r['invalid']}"]
             for s in summary if (r := s.get("reward"))]
    return ["agent", "arm", "horizon", "raw quality (FAMA)", "reward", "score (0-100)", "validity"], lines


def reward_note(summary: list[dict]) -> str:
    r = next(s["reward"] for s in summary if s.get("reward"))
    return (f"The hosted benchmark's card maps raw quality q (the row's mean FAMA, 0..1) through reference quality "
            f"b = {r['reference']} and anchor a = {r['anchor']}: reward = a/100 x q/b up to b, then a/100 + (1 - a/100) "
            "x (q - b)/(1 - b); the score is 100 x reward to one decimal. A row whose measurement is invalid gets no "
            "reward, never a low one.")


def evidence_split(questions: list[dict]) -> dict:
    """Where a loss happened: the share of the forgetting evidence the search returned, and FAMA among the questions
    whose memory evidence the search returned whole beside FAMA among those it returned in part or not at all (a
    low first figure is the answerer's loss, a gap between them retrieval's). Questions citing no memory evidence
    are in neither."""
    whole = [q["fama"] for q in questions if q["evidence"] and q["evidence_released"] == q["evidence"]]
    part = [q["fama"] for q in questions if q["evidence"] and q["evidence_released"] < q["evidence"]]
    return {"forgotten_recall": _mean([q["forgotten_released"] / q["forgotten"] for q in questions
                                       if q.get("forgotten")]),
            "fama_evidence_whole": _mean(whole), "evidence_whole": len(whole),
            "fama_evidence_part": _mean(part), "evidence_part": len(part)}


def stores_of(stores: list[dict]) -> dict:
    """The arm's stores behind a row: how many were built by its cells and how many came from the store cache,
    and each store's build seconds and size (a cached store's are those of the build that made it)."""
    return {"stores_built": sum(s["source"] == "ingested" for s in stores),
            "stores_cached": sum(s["source"] == "cache" for s in stores),
            "store_seconds": _median([s["seconds"] for s in stores]),
            "store_mib": _median([s["bytes"] / 2**20 for s in stores]),
            # a submission's index says nothing of what it holds: None, unobserved
            "store_documents": None if any(s["documents"] is None for s in stores) else sum(s["documents"] for s in stores)}


def contract_of(records: list[dict]) -> dict | None:
    """A submission's breaches of its contract over a row's cells (submission.contract_record): builds and search
    calls that failed or ran past their time, ids dropped by kind, answers that did not count by kind; None for an
    arm that is not a submission."""
    if not records:
        return None
    out = {"cells": len(records), "build_failed": sum(r["build"]["exit_code"] not in (0, None) for r in records),
           "build_timed_out": sum(bool(r["build"]["timed_out"]) for r in records),
           "index_refused": sum(bool(r["build"].get("refused")) for r in records),
           "search_failed": sum(r["search"]["failed"] for r in records),
           "search_timed_out": sum(r["search"]["timed_out"] for r in records),
           "malformed_lines": sum(r["search"]["malformed_lines"] for r in records),
           "answers_counted": sum(r["answers"]["counted"] for r in records), "violations": {}, "not_counted": {}}
    for r in records:
        for kind, n in r["violations"].items():
            out["violations"][kind] = out["violations"].get(kind, 0) + n
        for kind, n in r["answers"]["not_counted"].items():
            out["not_counted"][kind] = out["not_counted"].get(kind, 0) + n
    return out


def contract_table(summary: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Per agent x arm x horizon of a submission: what its own scripts did against the contract."""
    def kinds(counts: dict) -> str:
        return ", ".join(f"{k} {n}" for k, n in sorted(counts.items())) or "none"

    lines = [[s["agent"], s["arm"], s["horizon"], str(c["cells"]),
              f"{c['build_failed']} / {c['build_timed_out']} / {c['index_refused']}",
              f"{c['search_failed']} / {c['search_timed_out']} / {c['malformed_lines']}", kinds(c["violations"]),
              str(c["answers_counted"]), kinds(c["not_counted"])]
             for s in summary if (c := s.get("contract"))]
    return ["agent", "arm", "horizon", "cells", "builds failed / past time / index refused",
            "search calls failed / past time / malformed lines", "ids dropped (violations)", "answers counted",
            "answers not counted"], lines


CONTRACT_NOTE = ("A submission's own scripts against Memora's contract: none of these is a discard. A dropped id "
                 "(another person's, past the cutoff, repeated or past the 350th) never reaches the answer; an answer "
                 "that does not count is judged as empty; a stage past its time is stopped and scored as it left things.")


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def stores_table(summary: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Per agent x arm x horizon with a store: how it was built, in how long, how large."""
    lines = [[s["agent"], s["arm"], s["horizon"], str(s["stores_built"]), str(s["stores_cached"]),
              _f(s["store_seconds"]), _f(s["store_mib"]), "-" if s["store_documents"] is None else str(s["store_documents"])]
             for s in summary if s["stores_built"] or s["stores_cached"]]
    return ["agent", "arm", "horizon", "built", "from cache", "build s (median)", "MiB (median)", "records"], lines


STORES_NOTE = ("Each store is built once per arm, person and period by the arm's own ingest, then taken from the store "
               "cache by every other cell of that person and period; a cached store's seconds and size are those of "
               "the build that made it.")


def evidence_table(summary: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Per agent x arm x horizon: what the search returned of the evidence, and FAMA split by it."""
    lines = [[s["agent"], s["arm"], s["horizon"], _f(s["evidence_recall"]), _f(s["forgotten_recall"]),
              f"{_f(s['fama_evidence_whole'])} ({s['evidence_whole']})", f"{_f(s['fama_evidence_part'])} ({s['evidence_part']})"]
             for s in summary]
    return ["agent", "arm", "horizon", "memory evidence returned", "forgetting evidence returned",
            "FAMA, all memory evidence returned (qs)", "FAMA, some missing (qs)"], lines


EVIDENCE_NOTE = ("Per question, the share of the sessions its memory evidence cites that the search returned, and of "
                 "those its forgetting evidence cites (returning these is no fault: the answer must then treat them as "
                 "outdated). FAMA is split between questions whose memory evidence was all returned and the rest: low "
                 "FAMA with all evidence returned is the answerer's loss; a gap between the two, retrieval's.")


def judged_by(summary: list[dict]) -> str:
    """Who judged the rows of a table, as a sentence for its note (a run never mixes panels; its summary says so if
    rows of several runs ever do)."""
    panels = sorted({p for s in summary for p in s.get("judges", ())})
    return f"Judges: {'; '.join(panels)}." if panels else ""


def agreement_of(modelled: list[dict]) -> float | None:
    """Of the criteria both panels judged, the share the deterministic panel judged as the model panel did."""
    compared = [q for q in modelled if q.get("panels_agree") is not None]
    if not compared:
        return None
    return sum(q["panels_agree"] for q in compared) / sum(q.get("panels_compared", q["np"] + q["nf"]) for q in compared)


def flags_of(questions: list[dict]) -> list[str]:
    """What a reader of a row must know of how its questions were scored."""
    flags = []
    if violations := sum(q["violations"] for q in questions):
        flags.append(f"{violations} record ids the search may not return (another person's or past the cutoff; a "
                     "submission's also repeated or past the 350th) were dropped before the answer")
    if cut := [q for q in questions if q.get("answer_cut_at")]:
        flags.append(f"{len(cut)} answers were longer than {cut[0]['answer_cut_at']:,} characters and judged on that "
                     "much")
    return flags


def _f(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def table(summary: list[dict]) -> tuple[list[str], list[list[str]]]:
    lines = [[s["agent"], s["arm"], s["horizon"], f"{s['admitted']}/{s['cells']}", str(s["questions"]),
              _f(s["fama"]), "-" if s["fama_low"] is None else f"{s['fama_low']:.2f}-{s['fama_high']:.2f}",
              _f(s["mpa"]), _f(s["faa"]), _f(s["lambda"]), *(_f(s["by_kind"].get(k)) for k in kinds_of(summary)),
              _f(s["evidence_recall"]), str(s["violations"])] for s in summary]
    return (["agent", "arm", "horizon", "cells", "qs", "FAMA", "95 %", "MPA", "FAA", "λ",
             *(kind_label(k) for k in kinds_of(summary)), "evid", "viol"], lines)


def kind_label(kind: str) -> str:
    return kind[:3] if kind in KINDS else kind


def published_table(summary: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Remembering FAMA per horizon, in percent: the published rows, then memgrid's arms on its own corpus."""
    horizons = list(HORIZONS)
    rows, _, source = published_rows(next((s["format"] for s in summary if s.get("format")), None))
    if not rows or not memora_shaped(summary):
        return ["system", "source", *horizons], []
    lines = [[name, f"published ({source})", *map(str, values)] for name, values in rows.items()]
    arms: dict[tuple[str, str], dict[str, float | None]] = {}
    for s in summary:
        arms.setdefault((s["agent"], s["arm"]), {})[s["horizon"]] = s["table3"].get("remembering")
    for (agent, arm), by_h in arms.items():
        lines.append([arm, f"memgrid ({agent})", *("-" if by_h.get(h) is None else f"{100 * by_h[h]:.0f}" for h in horizons)])
    return ["system", "source", *horizons], lines


def table3(summary: list[dict]) -> tuple[list[str], list[list[str]]]:
    """FAMA x 100 laid out as Memora's Table 3: a row per agent x arm, a column per task x period."""
    order = list(HORIZONS)
    horizons = sorted({s["horizon"] for s in summary}, key=lambda h: (order.index(h) if h in order else len(order), h))
    kinds = kinds_of(summary)
    cells: dict[tuple[str, str], dict[tuple[str, str], float | None]] = {}
    for s in summary:
        for k in kinds:
            cells.setdefault((s["agent"], s["arm"]), {})[(k, s["horizon"])] = s["table3"].get(k)
    lines = [[agent, arm, *("-" if by.get((k, h)) is None else f"{100 * by[(k, h)]:.2f}" for k in kinds for h in horizons)]
             for (agent, arm), by in cells.items()]
    return ["agent", "arm", *(f"{kind_label(k)} {h}" for k in kinds for h in horizons)], lines


def table3_title(summary: list[dict]) -> tuple[str, str]:
    """The per-kind table's title and note: Memora's Table 3 for Memora's tasks, else per question kind."""
    if memora_shaped(summary):
        return "FAMA x 100 as Memora's Table 3 (task x period)", TABLE3_NOTE
    return ("FAMA x 100 per question kind (kind x condition)", "Per arm, question kind and condition, each person's "
            "mean per-question FAMA over the questions of that kind, then the mean over the persons with such "
            "questions, x 100 (the layout of Memora's Table 3, over this benchmark's own question kinds).")


def panel_table(summary: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Where a model panel judged: its agreement with the deterministic judges, and its invalid verdicts."""
    lines = [[s["agent"], s["arm"], s["horizon"], _f(s["agreement"]), str(s["invalid_judgements"])]
             for s in summary if s["panel"] == "model"]
    return ["agent", "arm", "horizon", "agreement with deterministic", "invalid verdicts"], lines
