"""`memgrid task import --format locomo` (issue 69, step 1): LoCoMo's locomo10.json (tests/data/locomo/, written for
these tests in LoCoMo's shape, none of LoCoMo's content: two samples) is hosted as a personal suite, the file
unchanged with its sha256; one unit per sample, one record per turn; a malformed sample is refused in one line
naming the file, the field and the fix, and the others go on; a hosted sample is read back only as imported."""

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runner import cli
from runner.digest import sha256_bytes
from runner.errors import SpecError, UserError
from runner.plan.spec import load_suites
from runner.sources.locomo import CONDITION, LocomoFormat, hosted_unit, import_locomo

from conftest import REPO, fake_checkout

FIXTURE = REPO / "tests" / "data" / "locomo"


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A private copy of the fixture as a git checkout holds it: data/locomo10.json and a .git naming its commit."""
    root = tmp_path / "LoCoMo"
    shutil.copytree(FIXTURE, root)
    return fake_checkout(root, "3eb6f2c0" * 5, "https://github.com/snap-research/LoCoMo.git")


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "project" / "tasks").mkdir(parents=True)
    return tmp_path / "project"


def quiet(message: str) -> None:
    pass


def samples(checkout: Path) -> list:
    return json.loads((checkout / "data" / "locomo10.json").read_text())


def rewrite(checkout: Path, doc) -> None:
    (checkout / "data" / "locomo10.json").write_text(json.dumps(doc, indent=2))


def test_locomo_is_hosted_unchanged_one_unit_per_sample_one_record_per_turn(checkout, project):
    result = import_locomo(checkout, project, "locomo", log=quiet)
    assert not result.refusals and [p.sample_id for p in result.plans] == ["test-ada", "test-cyd"]
    assert result.plans[0].line() == (
        "import test-ada -> tasks/locomo/: 2 sessions, 6 turns, 6 questions (category 1 1, 2 1, 3 1, 4 2, 5 1); "
        "1 evidence entries name no turn as written (D2:2; D1:1): oracle_memory releases the turns found in them")
    suite = project / "tasks" / "locomo"
    published = (checkout / "data" / "locomo10.json").read_bytes()
    assert (suite / "source" / "locomo10.json").read_bytes() == published  # byte for byte
    assert [p.name for p in (suite / "source").iterdir()] == ["locomo10.json"]
    provenance = json.loads((suite / "provenance.json").read_text())
    assert provenance["files"] == {"locomo10.json": sha256_bytes(published)}
    assert provenance["source"] == {"repository": "https://github.com/snap-research/LoCoMo.git", "commit": "3eb6f2c0" * 5}
    assert provenance["units"][0] == {"sample_id": "test-ada", "sessions": 2, "turns": 6, "questions": 6}
    suite_spec = load_suites(project)["locomo"]
    assert suite_spec.protocol == "personal" and suite_spec.source["format"] == "locomo"

    unit = hosted_unit(suite, "test-ada")[0]
    assert (unit.person, unit.name, unit.horizon) == ("test-ada", "Ada and Brook", CONDITION)
    first, image, other = unit.records[0], unit.records[2], unit.records[3]
    assert (first.id, first.session, first.date, first.dia_id) == ("test-ada-D1-1", 1, "2024-03-03", "D1:1")
    assert first.text == 'Ada said, "Morning! I finally adopted a cat, her name is Pixel."'
    assert first.turns() == (("user", first.text),) and other.turns() == (("assistant", other.text),)
    # an image turn reads as LoCoMo's own prompts show it: the caption after the text, the image not hosted
    assert image.text == 'Ada said, "She is grey with white paws." and shared a photo of a grey cat on a sofa'
    assert [r.session for r in unit.records] == [1, 1, 1, 2, 2, 2] and unit.records[-1].date == "2024-03-12"


def test_questions_keep_their_category_answer_and_evidence(checkout, project):
    import_locomo(checkout, project, "locomo", log=quiet)
    questions = {q.id: q for q in hosted_unit(project / "tasks" / "locomo", "test-ada")[0].questions}
    single = questions["test-ada-q0001"]
    assert (single.kind, single.text, single.cutoff_session) == ("4 single-hop", "What is the name of Ada's cat?", 2)
    assert [c.value for c in single.presence] == ["Pixel"] and single.evidence == ("test-ada-D1-1",)
    assert questions["test-ada-q0002"].kind == "1 multi-hop" and questions["test-ada-q0003"].kind == "2 temporal"
    assert questions["test-ada-q0004"].kind == "3 open-domain"
    year = questions["test-ada-q0005"]  # a number as the gold answer, as LoCoMo has six; an entry citing two turns
    assert [c.value for c in year.presence] == ["2024"] and year.evidence == ("test-ada-D2-2", "test-ada-D1-1")
    adversarial = questions["test-ada-q0006"]  # no answer: it should not give the adversarial one
    assert adversarial.kind == "5 adversarial" and adversarial.presence == ()
    assert [c.value for c in adversarial.forgetting] == ["grey with white paws"]
    cyd = {q.id: q for q in hosted_unit(project / "tasks" / "locomo", "test-cyd")[0].questions}
    assert cyd["test-cyd-q0002"].evidence == ()  # "D" names no turn: nothing for an oracle to release


@pytest.mark.parametrize("change, field", [
    (lambda s: s["conversation"].__setitem__("session_2_date_time", "yesterday"), "conversation.session_2_date_time"),
    (lambda s: s["conversation"]["session_1"][1].__setitem__("speaker", "Zed"), "conversation.session_1[1].speaker"),
    (lambda s: s["conversation"]["session_2"][0].__setitem__("dia_id", "D1:9"), "conversation.session_2[0].dia_id"),
    (lambda s: s["conversation"]["session_1"][0].pop("text"), "conversation.session_1[0].text"),
    (lambda s: s["qa"][0].pop("answer"), "qa[0].answer"),
    (lambda s: s["qa"][1].__setitem__("category", 6), "qa[1].category"),
    (lambda s: s["qa"][5].pop("adversarial_answer"), "qa[5].adversarial_answer"),
    (lambda s: s["qa"][2].__setitem__("evidence", "D2:1"), "qa[2].evidence"),
])
def test_a_malformed_sample_is_refused_in_one_line_and_the_others_go_on(checkout, project, change, field):
    doc = samples(checkout)
    change(doc[0])
    rewrite(checkout, doc)
    result = import_locomo(checkout, project, "locomo", log=quiet)
    assert [p.sample_id for p in result.plans] == ["test-cyd"]
    [refusal] = result.refusals
    line = refusal.line()
    assert line.startswith(f"refuse test-ada: data/locomo10.json sample test-ada: {field}: ") and " — fix: " in line
    assert "\n" not in line
    # the file is hosted unchanged all the same; only the sample read is run
    assert json.loads((project / "tasks" / "locomo" / "provenance.json").read_text())["units"] == [
        {"sample_id": "test-cyd", "sessions": 1, "turns": 2, "questions": 3}]
    with pytest.raises(SpecError, match="hosts no sample test-ada"):
        hosted_unit(project / "tasks" / "locomo", "test-ada")


def test_a_file_that_is_not_locomo_is_refused_in_one_line(checkout, project, tmp_path):
    (checkout / "data" / "locomo10.json").write_text("{not json")
    with pytest.raises(UserError, match=r"data/locomo10.json: is not JSON .* — fix: restore the file as published"):
        import_locomo(checkout, project, "locomo", log=quiet)
    (checkout / "data" / "locomo10.json").write_text('{"sample_id": "x"}')
    with pytest.raises(UserError, match="is dict, not a list of samples"):
        import_locomo(checkout, project, "locomo", log=quiet)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match=r"holds no LoCoMo data \(no data/locomo10.json\) — fix: give a checkout"):
        import_locomo(tmp_path / "empty", project, "locomo", log=quiet)
    assert not (project / "tasks" / "locomo").exists()


def test_the_json_file_alone_imports_as_the_checkout_does(checkout, project):
    result = import_locomo(checkout / "data" / "locomo10.json", project, "locomo", log=quiet)
    assert [p.sample_id for p in result.plans] == ["test-ada", "test-cyd"]
    assert json.loads((project / "tasks" / "locomo" / "provenance.json").read_text())["source"]["commit"] == "3eb6f2c0" * 5


@pytest.mark.parametrize("tamper, problem", [
    (lambda s: (s / "locomo10.json").write_bytes((s / "locomo10.json").read_bytes().replace(b"Pixel", b"Pixie")),
     "differs from LoCoMo as imported"),
    (lambda s: (s / "extra.json").write_text("[]"), "is not a file of LoCoMo as imported"),
    (lambda s: (s / "locomo10.json").unlink(), "is missing"),
])
def test_a_hosted_sample_is_read_only_as_imported(checkout, project, tamper, problem):
    import_locomo(checkout, project, "locomo", log=quiet)
    suite = project / "tasks" / "locomo"
    assert hosted_unit(suite, "test-ada")[0].records
    tamper(suite / "source")
    with pytest.raises(SpecError, match=problem):
        hosted_unit(suite, "test-ada")


def test_a_samples_identity_is_its_own_part_of_the_file(checkout, project, tmp_path):
    """One file holds every sample: changing one sample re-identifies it alone."""
    fmt = LocomoFormat()
    import_locomo(checkout, project, "locomo", log=quiet)
    before = {s: fmt.unit_files(project / "tasks" / "locomo", s, CONDITION) for s in ("test-ada", "test-cyd")}
    doc = samples(checkout)
    doc[1]["qa"][0]["answer"] = "Porto, Portugal"
    rewrite(checkout, doc)
    other = tmp_path / "other"
    (other / "tasks").mkdir(parents=True)
    import_locomo(checkout, other, "locomo", log=quiet)
    after = {s: fmt.unit_files(other / "tasks" / "locomo", s, CONDITION) for s in ("test-ada", "test-cyd")}
    assert after["test-ada"] == before["test-ada"] and after["test-cyd"] != before["test-cyd"]


def test_the_cli_imports_and_prints_the_grid_that_runs_it(checkout, project, monkeypatch):
    monkeypatch.setenv("MEMGRID_ROOT", str(project))
    done = CliRunner().invoke(cli.app, ["task", "import", "--format", "locomo", str(checkout)])
    assert done.exit_code == 0, done.output
    assert "imported 2 into suite locomo, refused 0" in done.output
    assert "suite locomo runs in the personal protocol (persons = samples, one condition: published)" in done.output
    assert "conditions: [published]" in done.output and "agents: [extractive]" in done.output
    again = CliRunner().invoke(cli.app, ["task", "import", "--format", "locomo", str(checkout)])
    # main() prints a UserError as its one line; the app raises it
    assert isinstance(again.exception, UserError) and str(again.exception).startswith("tasks/locomo: already exists — fix:")


def summary_row(fmt: str | None, kinds: dict[str, float], horizon: str) -> dict:
    """What analysis.summarise gives per agent x arm x condition, as far as the kind tables read it."""
    return {"agent": "extractive", "arm": "oracle_memory", "horizon": horizon, "cells": 1, "admitted": 1,
            "questions": 4, "fama": 0.5, "fama_low": None, "fama_high": None, "mpa": 0.5, "faa": 1.0, "lambda": 0.2,
            "by_kind": kinds, "table3": kinds, "suite": "s" if fmt else None, "format": fmt, "evidence_recall": 1.0,
            "violations": 0}


def test_a_locomo_run_is_reported_by_its_own_categories_and_beside_no_memora_rows():
    """The personal tables follow the units' own question kinds, and set beside a run only its own format's
    published rows: a LoCoMo run printed Memora's Table 3 and Memora's published rows as if it were Memora."""
    from runner.protocols.personal.analysis import published_table, summarise, table, table3, table3_title

    locomo = [summary_row("locomo", {"1 multi-hop": 0.25, "4 single-hop": 0.75}, CONDITION)]
    columns, lines = table(locomo)
    assert columns[10:12] == ["1 multi-hop", "4 single-hop"] and lines[0][10:12] == ["0.25", "0.75"]
    assert table3(locomo)[0] == ["agent", "arm", "1 multi-hop published", "4 single-hop published"]
    assert "Memora" not in table3_title(locomo)[0] and published_table(locomo)[1] == []
    # an arm whose every cell was discarded has no questions, so no kinds: it added Memora's three columns beside
    # LoCoMo's categories (a LoCoMo run with mempalace discarded printed 'rea', 'rec', 'rem')
    discarded = summarise([{"agent": "extractive", "arm": "mempalace", "condition": CONDITION, "admitted": False,
                            "result": None, "task": "conv-30", "discard_reason": "store_empty"}])
    assert discarded[0]["by_kind"] == {} and table(locomo + discarded)[0][10:-2] == ["1 multi-hop", "4 single-hop"]
    memora = [summary_row("memora", {"remembering": 0.5, "reasoning": 0.25, "recommending": None}, "weekly")]
    assert table(memora)[0][10:13] == ["rem", "rea", "rec"]
    assert table3_title(memora)[0] == "FAMA x 100 as Memora's Table 3 (task x period)"
    rows = published_table(memora)[1]
    assert rows[0][:2] == ["LangMem", "published (Memora)"] and rows[-1] == ["oracle_memory", "memgrid (extractive)",
                                                                            "50", "-", "-"]
