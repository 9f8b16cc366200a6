"""SMRITI-Bench's layout (genomewalker/chitta, benchmarks/smriti/) with tasks written here, none of SMRITI's own:
`write_smriti(root)` makes benchmarks/smriti/ with a folder-fixture task, a git-fixture task pinned by sha, two
malformed tasks, split.json and a corpus test whose LEAK_CHECK_TERMS the import reads without running it."""

import json
import subprocess
from pathlib import Path

APP = "def greeting(name):\n    return f'Hello, {name}.'\n"  # plausible: passes the visible test, not hidden/'s
VISIBLE_TEST = ("import unittest\nfrom app import greeting\n\n\nclass T(unittest.TestCase):\n"
                "    def test_returns_text(self):\n        self.assertIsInstance(greeting('ada'), str)\n")
HIDDEN_TEST = ("import unittest\nfrom app import greeting\n\n\nclass Hidden(unittest.TestCase):\n"
               "    def test_convention(self):\n        self.assertEqual(greeting('ada'), 'Ahoy, ada!')\n")
SOLUTION = "def greeting(name):\n    return f'Ahoy, {name}!'\n"
MEMORY = {"content": "[wisdom] Greetings in this project always start with 'Ahoy,' and end with '!'.",
          "realm": "smriti-sm-folder", "type": "wisdom"}


def task_json(task_id: str, fixture: str, **changes) -> dict:
    task = {"id": task_id, "repo_fixture": fixture, "prompt": "Implement greeting(name) in app.py.",
            "check_cmd": "python3 -m unittest discover -q", "planted_memories": [MEMORY], "tags": ["python"],
            "expected_tokens_budget": 2000}
    task.update(changes)
    return {k: v for k, v in task.items() if v is not None}


def write_task(tasks: Path, task_id: str, task: dict, fixture: dict[str, str] | None) -> Path:
    folder = tasks / task_id
    files = {"task.json": json.dumps(task, indent=2) + "\n", "hidden/test_hidden.py": HIDDEN_TEST,
             "solution/app.py": SOLUTION, **{f"repo_fixture/{k}": v for k, v in (fixture or {}).items()}}
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def git_repo(path: Path) -> str:
    """A repository holding the fixture, one commit; its sha."""
    path.mkdir(parents=True)
    (path / "app.py").write_text(APP)
    (path / "test_app.py").write_text(VISIBLE_TEST)
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "fixture"], check=True)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


def write_smriti(root: Path, canary: Path | None = None) -> Path:
    """benchmarks/smriti/ under `root`; `canary`: a file the corpus test would create if anything ran it."""
    smriti = root / "benchmarks" / "smriti"
    tasks = smriti / "tasks"
    write_task(tasks, "sm-folder", task_json("sm-folder", "repo_fixture"), {"app.py": APP, "test_app.py": VISIBLE_TEST})
    sha = git_repo(root / "fixture-repo")
    url = (root / "fixture-repo").as_uri()
    write_task(tasks, "sm-git", task_json("sm-git", f"git:{url}#{sha}"), None)
    write_task(tasks, "sm-nocheck", task_json("sm-nocheck", "repo_fixture", check_cmd=None), {"app.py": APP})
    write_task(tasks, "sm-unpinned", task_json("sm-unpinned", f"git:{url}#main"), None)
    # not in sorted order: its split_hash is taken over the keys sorted, as SMRITI's split.fingerprint takes it
    (smriti / "split.json").write_text(json.dumps({"sm-unpinned": "visible", "sm-git": "holdout", "sm-folder": "visible",
                                                   "sm-nocheck": "visible"}, indent=2) + "\n")
    (smriti / "tests").mkdir()
    (smriti / "tests" / "test_scaffold.py").write_text(
        f"open({str(canary or root / 'RAN')!r}, 'w').close()\n\n"
        "LEAK_CHECK_TERMS = {\n    \"sm-folder\": [\"ahoy\"],\n    \"sm-git\": [\"ahoy\", \"'!'\"],\n}\n")
    return smriti


def write_corpus(root: Path) -> Path:
    """write_smriti's tasks and four more, for SMRITI's corpus tests: two sound ones, one whose prompt leaks its
    convention, one whose solution does not follow it (task check must flag exactly those two)."""
    smriti = write_smriti(root)
    tasks = smriti / "tasks"
    fixture = {"app.py": APP, "test_app.py": VISIBLE_TEST}
    for task_id in ("sm-second", "sm-third"):
        write_task(tasks, task_id, task_json(task_id, "repo_fixture"), fixture)
    write_task(tasks, "sm-leaky", task_json("sm-leaky", "repo_fixture",
                                            prompt="Implement greeting(name) in app.py; house style starts with Ahoy."),
               fixture)
    (write_task(tasks, "sm-badsolution", task_json("sm-badsolution", "repo_fixture"), fixture)
     / "solution" / "app.py").write_text("def greeting(name):\n    return f'Hi, {name}!'\n")
    terms = {t: ["ahoy"] for t in ("sm-folder", "sm-git", "sm-second", "sm-third", "sm-leaky", "sm-badsolution")}
    (smriti / "tests" / "test_scaffold.py").write_text(f"LEAK_CHECK_TERMS = {terms!r}\n")
    return smriti
