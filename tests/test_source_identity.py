"""A hosted unit's identity is its files, the format's reader version and what the reader made of the files, never the
bytes of the format's module (issue 68, step 3): code can move without re-identifying a run, and a change of how a
format reads its fixture fails here until its reader_version is bumped and the pin renewed."""

import shutil
import subprocess
import sys

import pytest

from runner.digest import sha256_json
from runner.sources import locomo, memora, smriti, traptask
from runner.sources.registry import FORMATS
from runner.units.personal import unit_digest

from conftest import REPO
from smriti_fixture import write_smriti

# format -> (its reader_version, the digest of its fixture's units as read). Renew with the digest a failure prints,
# after bumping the format's reader_version when the reading changed what a unit means.
PINNED = {
    "locomo": (3, "d7a16d37b59bcefc4aee8388715cb39032cf8ebed07edc0c18912d37523dac9e"),
    "memora": (1, "9aac18a8dcb2c211e3a69a6c90f81ac3c3c436a7d1b823fc30e7b7585fb366b5"),
    "smriti": (1, "c293c074ed80e1355ac4bc478fc255caef97ba41f2e8c10874cf4f026a551a29"),
    "traptask": (1, "458b7233abac101408d1cca3f8a96d17f8c947cf39d250ee48cf9f9fcf3a94bf"),
}


def memora_read(tmp_path) -> str:
    root = tmp_path / "memora-project"
    (root / "tasks").mkdir(parents=True)
    memora.import_memora(REPO / "tests" / "data" / "memora", root, "memora", log=lambda m: None)
    folder = root / "tasks" / "memora"
    units = memora.provenance_of(folder)["units"]
    return sha256_json({f"{u['period']}/{u['persona']}": unit_digest(memora.hosted_unit(folder, u["persona"], u["period"]))
                        for u in units})


def locomo_read(tmp_path) -> str:
    root = tmp_path / "locomo-project"
    (root / "tasks").mkdir(parents=True)
    locomo.import_locomo(REPO / "tests" / "data" / "locomo", root, "locomo", log=lambda m: None)
    folder = root / "tasks" / "locomo"
    return sha256_json({s: unit_digest(u) for s, (u, _) in locomo.hosted_samples(folder).items()})


def smriti_read(tmp_path) -> str:
    root = tmp_path / "smriti-project"
    (root / "tasks").mkdir(parents=True)
    smriti.import_smriti(write_smriti(tmp_path / "chitta"), root, "smriti", log=lambda m: None)
    return sha256_json({i: smriti.task_as_read(t) for i, t in smriti.hosted_tasks(root / "tasks" / "smriti").items()})


def traptask_read(tmp_path) -> str:
    task = tmp_path / "src" / "pair_recall"
    shutil.copytree(REPO / "tests" / "data" / "traptask" / "pair_recall", task,
                    ignore=shutil.ignore_patterns("__pycache__", "inputs", "expected"))
    subprocess.run([sys.executable, "-B", "build_cases.py"], cwd=task, check=True, capture_output=True, timeout=60)
    root = tmp_path / "trap-project"
    (root / "tasks").mkdir(parents=True)
    traptask.import_task(task, root, "pair_recall", log=lambda m: None)
    cases = traptask.TrapTaskFormat().hosted_cases(root / "tasks" / "pair_recall")
    return sha256_json({i: [c.title, c.prompts, c.secrets, c.reference] for i, c in cases.items()})


READ = {"locomo": locomo_read, "memora": memora_read, "smriti": smriti_read, "traptask": traptask_read}


def pin_problem(name: str, digest: str) -> str | None:
    version, pinned = PINNED[name]
    if FORMATS[name].reader_version != version:
        return f"{name}'s reader_version is {FORMATS[name].reader_version}, pinned {version}: renew PINNED['{name}'] = " \
               f"({FORMATS[name].reader_version}, {digest!r})"
    if digest != pinned:
        return (f"{name} reads its fixture differently ({digest}, pinned {pinned}) under the same reader_version "
                f"{version}: bump {FORMATS[name].__name__}.reader_version and renew the pin")
    return None


def test_every_format_read_at_run_time_has_a_reader_version_and_a_pin():
    assert {n for n, cls in FORMATS.items() if cls.reader_version is not None} == set(PINNED) == set(READ)


@pytest.mark.parametrize("name", sorted(PINNED))
def test_a_formats_reading_of_its_fixture_is_pinned_under_its_version(name, tmp_path):
    assert pin_problem(name, READ[name](tmp_path)) is None


def test_a_changed_reading_fails_the_pin_and_names_the_fix(tmp_path, monkeypatch):
    """The pin can fail: Memora's fixture read with another rule for the value a sub-question names."""
    monkeypatch.setattr(memora, "named_value", lambda text, evidence: "")
    memora.hosted_unit.cache_clear()
    problem = pin_problem("memora", memora_read(tmp_path))
    memora.hosted_unit.cache_clear()
    assert problem and "bump MemoraFormat.reader_version" in problem
