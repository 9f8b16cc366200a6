"""Task validity invariants: every shipped task holds them, and a broken task is caught."""

import shutil


from runner.grading.canaries import TASK_AWARE
from runner.plan.spec import load_all_arms, load_all_tasks
from runner.tasks.check import (artifact_variants, check_behaviour, containment_findings, task_aware_coverage,
                                transcript_findings)


def failures(findings):
    return [f"{f.task}: {f.rule}: {f.file}: {f.detail}" for f in findings if not f.passed]


def test_at_least_twelve_tasks_three_split_across_sessions():
    from conftest import REPO

    tasks = load_all_tasks(REPO)
    assert len(tasks) >= 12, sorted(tasks)
    split = [t.id for t in tasks.values() if t.plants and len(t.plants.roles["fact"]) >= 2]
    assert len(split) >= 3, split


def test_shipped_tasks_pass_the_static_audits():
    from conftest import REPO

    tasks = list(load_all_tasks(REPO).values())
    findings = containment_findings(tasks, list(load_all_arms(REPO).values()))
    findings += [f for t in tasks for f in transcript_findings(t)]
    assert not failures(findings)


def test_shipped_tasks_pass_the_behaviour_invariants(engine, images):
    from conftest import REPO

    tasks = list(load_all_tasks(REPO).values())
    findings = check_behaviour(engine, images, tasks)
    assert findings and not failures(findings)
    aware = {(t.id, f"hack canary {c.name} fails") for t in tasks if t.entry is not None for c in TASK_AWARE}
    assert aware and aware <= {(f.task, f.rule) for f in findings}


def test_the_task_aware_canaries_attack_a_task_only_through_its_declared_entry():
    from conftest import REPO

    tasks = load_all_tasks(REPO)
    aware = {f"canary/{c.name}" for c in TASK_AWARE}
    slug = {e.path: e for e in artifact_variants(tasks["slug_ids"])["canary/caller-frames"]}
    naive = {e.path: e for e in artifact_variants(tasks["slug_ids"])["naive"]}
    assert [p for p in slug if slug[p] != naive[p]] == ["records/__init__.py"]
    assert slug["records/__init__.py"].data.startswith(naive["records/__init__.py"].data)
    assert task_aware_coverage(tasks["slug_ids"]) is None
    assert not aware & set(artifact_variants(tasks["cli_exit_codes"]))
    assert "not covered by the task-aware canaries" in task_aware_coverage(tasks["cli_exit_codes"])


def test_a_naive_that_passes_is_caught(engine, images, project):
    task_dir = project / "tasks" / "slug_ids"
    shutil.rmtree(task_dir / "references" / "naive")
    shutil.copytree(task_dir / "references" / "informed", task_dir / "references" / "naive")
    findings = check_behaviour(engine, images, [load_all_tasks(project)["slug_ids"]])
    assert failures(findings) == [f for f in failures(findings) if "naive" in f] != []
    assert any(f.startswith("slug_ids: naive fails: references/naive/") for f in failures(findings))


def test_a_detector_that_never_fires_is_caught(engine, images, project):
    task_dir = project / "tasks" / "slug_ids"
    (task_dir / "oracle" / "detect.py").write_text('print(\'{"fired": []}\')\n')
    bad = failures(check_behaviour(engine, images, [load_all_tasks(project)["slug_ids"]]))
    assert {f.split(":")[1].strip() for f in bad} == {
        f"detector names {c} on damaged/{c}" for c in ("superseded", "contradictory", "adjacent")}


def test_a_fact_term_leaked_into_the_fixture_is_caught(project):
    tasks = load_all_tasks(project)
    term = tasks["slug_ids"].fact_terms[0]
    readme = project / "tasks" / "slug_ids" / "fixture" / "README.md"
    readme.write_text(readme.read_text() + f"\nNote: {term}\n")
    bad = failures(containment_findings(list(load_all_tasks(project).values()), list(load_all_arms(project).values())))
    assert len(bad) == 1 and "fact terms appear nowhere else" in bad[0] and "fixture/README.md" in bad[0]


def test_a_fact_term_in_another_tasks_transcript_is_caught(project):
    tasks = load_all_tasks(project)
    term = tasks["slug_ids"].fact_terms[0]
    other = tasks["cli_exit_codes"]
    rival = project / "tasks" / "cli_exit_codes" / other.plants.roles["rival"][0]
    rival.write_text(rival.read_text() + '{"role": "user", "content": "also ' + term + '"}\n')
    bad = failures(containment_findings(list(load_all_tasks(project).values()), []))
    assert any(b.startswith("slug_ids: fact terms appear nowhere else") and "cli_exit_codes" in b for b in bad), bad


def test_a_missing_fact_term_is_caught(project):
    import yaml

    task_yaml = project / "tasks" / "slug_ids" / "task.yaml"
    data = yaml.safe_load(task_yaml.read_text())
    data["fact"]["terms"].append("zebra crossing governance")
    task_yaml.write_text(yaml.safe_dump(data))
    bad = failures(containment_findings(list(load_all_tasks(project).values()), []))
    assert any("fact term 'zebra crossing governance' in its fact transcripts" in b for b in bad), bad
