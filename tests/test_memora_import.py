"""`memgrid task import --format memora` (issue 53, step 1): a Memora checkout (tests/data/memora/, written for these
tests in Memora's layout, none of Memora's content: two personas over two periods) is hosted as a personal suite,
its files unchanged with every file's sha256; a malformed file refuses its persona and period in one line naming the
file and the field, and the others go on; a hosted unit is read back only as imported."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from runner.digest import sha256_bytes
from runner.errors import SpecError, UserError
from runner.plan.spec import load_suites
from runner.sources.memora import MemoraFormat, hosted_unit, import_memora

from conftest import fake_checkout

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "data" / "memora"
UNITS = [("weekly", "test_baker"), ("weekly", "test_pilot"), ("monthly", "test_baker"), ("monthly", "test_pilot")]


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A private copy of the fixture as a git checkout would hold it: data/ and a .git naming its commit."""
    root = tmp_path / "Memora"
    shutil.copytree(FIXTURE, root)
    return fake_checkout(root, "a6493188" * 5, "https://github.com/geniesinc/Memora.git")


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "project" / "tasks").mkdir(parents=True)
    return tmp_path / "project"


def quiet(message: str) -> None:
    pass


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_memora_is_hosted_unchanged_as_a_personal_suite(checkout, project):
    seen = []
    result = import_memora(checkout, project, "memora", log=seen.append)
    assert not result.refusals and [(p.period, p.persona) for p in result.plans] == UNITS
    assert seen == [f"[{i}/4] reading {period}/{persona}" for i, (period, persona) in enumerate(UNITS, 1)]
    assert result.plans[0].line() == ("import weekly/test_baker -> tasks/memora/: 4 sessions, 2 questions "
                                      "(1 remembering, 1 reasoning, 0 recommending), 3 sub-questions")
    suite = project / "tasks" / "memora"
    hosted, published = files_of(suite / "source"), files_of(checkout / "data")
    assert hosted == published and len(hosted) == 18  # every file, byte for byte
    provenance = json.loads((suite / "provenance.json").read_text())
    assert provenance["files"] == {rel: sha256_bytes(data) for rel, data in published.items()}
    assert provenance["source"] == {"repository": "https://github.com/geniesinc/Memora.git", "commit": "a6493188" * 5}
    spec = load_suites(project)["memora"]
    assert spec.protocol == "personal" and spec.source["format"] == "memora" and spec.source["commit"] == "a6493188" * 5
    assert MemoraFormat().hosted_units(suite) == [
        ("test_baker", "Memora persona: weekly (4 sessions, 2 questions), monthly (4 sessions, 2 questions)"),
        ("test_pilot", "Memora persona: weekly (3 sessions, 1 questions), monthly (3 sessions, 1 questions)")]


def test_a_hosted_unit_is_its_sessions_in_order_and_its_questions_with_their_sub_questions(checkout, project):
    import_memora(checkout, project, "memora", log=quiet)
    unit = hosted_unit(project / "tasks" / "memora", "test_baker", "weekly")
    assert unit.id == "test_baker-weekly" and [r.id for r in unit.records] == [
        "test_baker-weekly-0001", "test_baker-weekly-0002", "test_baker-weekly-0003", "test_baker-weekly-0004"]
    second = unit.records[1]  # the assistant spoke first: the turns stay in their order, speaker-labelled
    assert (second.session, second.date, second.person) == (2, "2025-03-04", "test_baker")
    assert second.text == "assistant: Good morning, what shall we plan today?\nuser: Nothing much, just chatting about weather."
    assert second.turns() == (("assistant", "Good morning, what shall we plan today?"),
                              ("user", "Nothing much, just chatting about weather."))
    kind, load = unit.questions
    assert (kind.id, kind.kind, kind.cutoff_session, kind.evidence, kind.forgotten) == (
        "bake_kind_4", "remembering", 4, ("test_baker-weekly-0003",), ("test_baker-weekly-0001",))
    assert [(c.id, c.evaluation_type, c.value, c.named) for c in (*kind.presence, *kind.forgetting)] == [
        ("bake_kind_4_eval_memory_presence_0", "memory_presence", "Does the response mention spelt?", "spelt"),
        ("bake_kind_4_eval_forgetting_0", "forgetting_absence", "Does the response say rye is still baked?", "rye")]
    assert unit.oracle_evidence() == ["test_baker-weekly-0001", "test_baker-weekly-0003"]  # what its questions cite
    # the cutoff is the last session on or before the question's date, not the unit's last
    assert (load.id, load.kind, load.cutoff_session, len(load.presence), load.forgetting) == (
        "bake_load_2", "reasoning", 2, 1, ())


def test_a_content_questions_session_history_is_its_evidence_and_never_a_value():
    """Memora's content questions ("Write a project proposal for ...") cite no session_id: their memory_evidence holds
    the document's fields and a session_history, the sessions that wrote and changed it. Those are the question's
    evidence (what an oracle returns, what the evidence table counts); their numbers are no value a judge looks for."""
    from runner.sources.memora import evidence_sessions, evidence_values

    evidence = {"content_data": {"project_title": "Federated Learning Framework", "budget": 1100000},
                "session_history": [49, 78, 85]}
    assert evidence_sessions(evidence) == {49, 78, 85}
    assert evidence_values(evidence) == {"Federated Learning Framework", "1100000"}
    assert evidence_sessions({"tasks": [{"value": "Buy art", "session_id": 12}], "session_history": ["49", True]}) == {12}


def test_a_sub_question_names_the_value_its_own_evidence_holds_for_the_deterministic_judges(checkout, project):
    """The value a deterministic judge looks for: the longest value of the sub-question's own kind of evidence in its
    text (not the other kind's, not a session id), else what it quotes, else what follows its colon, else none."""
    from runner.sources.memora import named_value

    evidence = {"tasks": [{"value": "Buy art supplies", "session_id": 12}, {"value": "Buy art", "session_id": 40}],
                "count": 2}
    assert named_value("Does the response include Buy art supplies in the current task list?", evidence) == \
        "Buy art supplies"
    assert named_value("Is 'Call family' mentioned?", evidence) == "Call family"
    assert named_value("Does the response mention the deleted task: Update design blog?", evidence) == "Update design blog"
    assert named_value("Does the response mention session 12 twice?", evidence) == ""  # 2 is short; 12 is an id
    result = import_memora(checkout, project, "memora", periods=("monthly",), log=quiet)
    assert [p.line().split(", ")[-1] for p in result.plans] == [
        "3 sub-questions (2 name no value the deterministic judges can look for)",
        "1 sub-questions (1 name no value the deterministic judges can look for)"]


def test_periods_and_personas_pick_a_subset_and_a_name_not_in_the_source_is_refused(checkout, project):
    result = import_memora(checkout / "data", project, "memora", periods=("monthly",), personas=("test_pilot",), log=quiet)
    assert [(p.period, p.persona) for p in result.plans] == [("monthly", "test_pilot")]
    assert sorted(files_of(project / "tasks" / "memora" / "source")) == [
        "monthly/test_pilot/conversations/session_0001.json", "monthly/test_pilot/conversations/session_0002.json",
        "monthly/test_pilot/conversations/session_0003.json", "monthly/test_pilot/evaluation_questions_test_pilot.json"]
    # data/ of a checkout: the commit is still the checkout's
    assert json.loads((project / "tasks" / "memora" / "provenance.json").read_text())["source"]["commit"] == "a6493188" * 5
    with pytest.raises(UserError, match=r"^--personas: 'chef' is not a persona of .* — fix: use test_baker, test_pilot$"):
        import_memora(checkout, project, "other", personas=("chef",), log=quiet)
    with pytest.raises(UserError, match=r"^--periods: 'yearly' is not a period of .* — fix: use weekly, monthly$"):
        import_memora(checkout, project, "other", periods=("yearly",), log=quiet)
    with pytest.raises(UserError, match=r"^tasks/memora: already exists"):
        import_memora(checkout, project, "memora", log=quiet)
    with pytest.raises(UserError, match=r"holds no Memora data .* — fix: give a checkout of github.com/geniesinc/Memora"):
        import_memora(checkout / "data" / "weekly", project, "other", log=quiet)


def session_file(root: Path, period="weekly", persona="test_baker", n=2) -> Path:
    return root / "data" / period / persona / "conversations" / f"session_{n:04d}.json"


def questions_file(root: Path, period="weekly", persona="test_baker") -> Path:
    return root / "data" / period / persona / f"evaluation_questions_{persona}.json"


def change(path: Path, edit) -> None:
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


def first_question(doc) -> dict:
    return doc["questions"]["remembering"][0]


BROKEN = {  # what is wrong -> (the file, how, the refusal's file: field: problem — fix)
    "not JSON": (session_file, lambda p: p.write_text("{"), "conversations/session_0002.json: (file): is not JSON"),
    "a speaker Memora has not": (
        session_file, lambda p: change(p, lambda d: d["conversation"][1].update(speaker="narrator")),
        "conversations/session_0002.json: conversation[1].speaker: is 'narrator' — fix: use one of user_agent, ai_agent"),
    "a message that is not text": (
        session_file, lambda p: change(p, lambda d: d["conversation"][0].update(message=None)),
        "conversations/session_0002.json: conversation[0].message: is null, not text — fix: give the turn's text"),
    "a session_id its file name does not have": (
        session_file, lambda p: change(p, lambda d: d.update(session_id=7)),
        "conversations/session_0002.json: session_id: is 7, but the file is session 2"),
    "another persona's session": (
        session_file, lambda p: change(p, lambda d: d.update(persona="test_pilot")),
        "conversations/session_0002.json: persona: is 'test_pilot', not the folder's 'test_baker'"),
    "a date that is not one": (
        session_file, lambda p: change(p, lambda d: d.update(date="March 4th")),
        "conversations/session_0002.json: date: 'March 4th' is not a date — fix: give the date as YYYY-MM-DD"),
    "a task type Memora has not": (
        questions_file, lambda p: change(p, lambda d: d["questions"].update(trivia=[])),
        "evaluation_questions_test_baker.json: questions.trivia: is not a task type of Memora's"),
    "a sub-question of no known type": (
        questions_file,
        lambda p: change(p, lambda d: first_question(d)["evaluation"]["evaluation_questions"][0].update(evaluation_type="style")),
        "evaluation_questions_test_baker.json: questions.remembering[0].evaluation.evaluation_questions[0]"
        ".evaluation_type: is 'style' — fix: use memory_presence or forgetting_absence"),
    "a presence sub-question expecting no": (
        questions_file,
        lambda p: change(p, lambda d: first_question(d)["evaluation"]["evaluation_questions"][0].update(expected_answer="no")),
        "questions.remembering[0].evaluation.evaluation_questions[0].expected_answer: is 'no' for a memory_presence "
        "sub-question"),
    "evidence naming a session that is not there": (
        questions_file,
        lambda p: change(p, lambda d: first_question(d)["memory_evidence"]["bread"][0].update(session_id=99)),
        "questions.remembering[0].memory_evidence: names session 99, which is not in conversations/"),
    "a question asked before every session": (
        questions_file, lambda p: change(p, lambda d: first_question(d).update(question_date="2024-01-01")),
        "questions.remembering[0].question_date: 2024-01-01 is before every session"),
    "a duplicated question id": (
        questions_file,
        lambda p: change(p, lambda d: d["questions"]["reasoning"][0].update(question_id="bake_kind_4")),
        "questions.reasoning[0].question_id: 'bake_kind_4' is a duplicate or not a plain id"),
    "no questions file": (questions_file, lambda p: p.unlink(), "evaluation_questions_test_baker.json: (file): is missing"),
}


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_malformed_file_refuses_its_persona_and_period_in_one_line_and_the_others_go_on(checkout, project, broken):
    which, damage, expected = BROKEN[broken]
    damage(which(checkout))
    result = import_memora(checkout, project, "memora", log=quiet)
    assert [(p.period, p.persona) for p in result.plans] == [u for u in UNITS if u != ("weekly", "test_baker")]
    [refusal] = result.refusals
    line = refusal.line()
    assert line.startswith("refuse test_baker: data/weekly/test_baker/") and expected in line and " — fix: " in line, line
    assert "\n" not in line
    hosted = files_of(project / "tasks" / "memora" / "source")
    assert hosted and not any(rel.startswith("weekly/test_baker/") for rel in hosted)  # nothing of the refused unit


def test_a_dry_run_writes_nothing(checkout, project):
    result = import_memora(checkout, project, "memora", dry_run=True, log=quiet)
    assert len(result.plans) == 4 and not result.created
    assert list((project / "tasks").iterdir()) == []


def relink(path: Path) -> None:
    """`path` moved out of the project (beside it) and a link to it left in its place."""
    outside = next(p for p in path.parents if p.name == "tasks").parent.parent / f"moved-{path.name}"
    path.rename(outside)
    path.symlink_to(outside, target_is_directory=outside.is_dir())


@pytest.mark.parametrize("tamper,problem", [
    (lambda s: s.write_text(s.read_text().replace("spelt only", "rye only")), "differs from Memora as imported"),
    (lambda s: s.unlink(), "is missing"),
    (lambda s: (s.parent / "session_0009.json").write_text("{}"), "is not a file of Memora as imported"),
    (lambda s: relink(s), "differs from Memora as imported"),  # the same bytes, through a link
    (lambda s: relink(s.parent.parent), "leads to .*, outside the hosted Memora suite"),
])
def test_a_hosted_unit_is_read_only_as_imported(checkout, project, tamper, problem):
    import_memora(checkout, project, "memora", log=quiet)
    suite = project / "tasks" / "memora"
    tamper(suite / "source" / "weekly" / "test_baker" / "conversations" / "session_0003.json")
    hosted_unit.cache_clear()
    with pytest.raises(SpecError, match=problem):
        hosted_unit(suite, "test_baker", "weekly")
    assert hosted_unit(suite, "test_pilot", "weekly").questions[0].id == "route_3"  # another unit is untouched
    with pytest.raises(SpecError, match=r"hosts no yearly/test_pilot"):
        hosted_unit(suite, "test_pilot", "yearly")


def memgrid(*args, root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / ".venv/bin/memgrid"), "task", *args], capture_output=True, text=True,
                          env={**os.environ, "MEMGRID_ROOT": str(root)}, timeout=120)


def test_the_command_line_imports_lists_and_refuses_in_one_line(checkout, project):
    done = memgrid("import", "--format", "memora", "--periods", "weekly", str(checkout), root=project)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [
        "import weekly/test_baker -> tasks/memora/: 4 sessions, 2 questions (1 remembering, 1 reasoning, 0 "
        "recommending), 3 sub-questions",
        "import weekly/test_pilot -> tasks/memora/: 3 sessions, 1 questions (1 remembering, 0 reasoning, 0 "
        "recommending), 2 sub-questions"]
    assert "imported 2 into suite memora, refused 0" in done.stdout and "[2/2] reading weekly/test_pilot" in done.stderr
    listed = memgrid("list", "--suite", "memora", root=project)
    assert listed.returncode == 0 and "test_baker" in listed.stdout and "(protocol personal)" in listed.stdout, listed.stdout
    wrong = memgrid("import", "--format", "amb", "--periods", "weekly", str(checkout), root=project)
    assert wrong.returncode == 2 and wrong.stderr.strip() == \
        "memgrid: --periods: format amb has no such option — fix: drop it", wrong.stderr
    session_file(checkout, "monthly").write_text("[]")
    refused = memgrid("import", "--format", "memora", "--suite", "memora_b", str(checkout), root=project)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert ("refuse test_baker: data/monthly/test_baker/conversations/session_0002.json: (file): is a list [], not "
            "an object — fix: restore the session file as published") in refused.stderr, refused.stderr
    assert "imported 3 into suite memora_b, refused 1" in refused.stdout
