"""Malformed spec files of every kind, through the real command line (`runner.cli.main`, what the console
script calls): one line naming the file with a fix, exit 2, no traceback, nothing written, no engine touched.

Each kind is a shipped spec in a private copy of the project, mutated one way at a time: generic damage
(empty, binary, YAML tags, alias bombs, duplicate keys, nesting bombs, ...), then every field of the shipped
file replaced by a value of another type, and an unknown field added to every mapping.
"""

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Callable

import pytest
import yaml

from runner.cli import main
from runner.digest import GENERATED

REPO = Path(__file__).resolve().parent.parent
PREREG = "preregistration/001-default-reader.md"
GRID = "name: fuzz\ntasks: [slug_ids]\narms: [bare]\nagents: [floor]\nseeds: 1\nconditions: [present]\n"
SUITE = ("name: fuzzsuite\ntitle: Tasks imported from a checkout\n"
         "source: {format: amb, repository: GiulioDER/agent-memory-bench, commit: null}\n")  # as task import writes one


@dataclass(frozen=True)
class Kind:
    name: str
    file: str  # relative to the project root
    argv: tuple[str, ...]  # the command that loads it; "{file}" stands for its absolute path


KINDS = (
    Kind("grid", "fuzz-grid.yaml", ("grid", "--spec", "{file}", "--no-progress")),
    Kind("arm", "arms/recall/arm.yaml", ("arm", "check", "recall")),
    Kind("task", "tasks/slug_ids/task.yaml", ("task", "check", "slug_ids", "--static")),
    Kind("plants", "tasks/slug_ids/plants.yaml", ("task", "check", "slug_ids", "--static")),
    Kind("prereg", PREREG, ("grid", "--prereg", "{file}", "--no-progress")),
    Kind("corpus", "corpus/corpus.yaml", ("corpus", "build", "--conditions", "present", "--seeds", "0")),
    Kind("suite", "tasks/fuzzsuite/suite.yaml", ("task", "list")),
)

BILLION_LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8))

# name -> the file's YAML text -> the damaged YAML (text, or bytes where the damage is not text)
GENERIC: dict[str, Callable[[str], str | bytes]] = {
    "empty": lambda t: "",
    "comments only": lambda t: "# nothing but a comment\n",
    "binary": lambda t: bytes(range(256)) * 4,
    "latin-1": lambda t: t.encode() + "note: caf\xe9\n".encode("latin-1"),
    "nul byte": lambda t: t + "note: a\x00b\n",
    "a list at the top": lambda t: "- one\n- two\n",
    "text at the top": lambda t: "just a sentence\n",
    "a number at the top": lambda t: "42\n",
    "python tag": lambda t: t + "note: !!python/object/apply:os.system ['touch pwned']\n",
    "python tag on the document": lambda t: "!!python/object:os.system\n" + t,
    "local tag": lambda t: t + "note: !thing {a: 1}\n",
    "set tag": lambda t: t + "note: !!set {a, b}\n",
    "binary tag": lambda t: t + "note: !!binary aGVsbG8=\n",
    "alias bomb": lambda t: BILLION_LAUGHS,
    "alias bomb in a spec": lambda t: t + BILLION_LAUGHS.replace("a: &a", "note: &a"),
    "recursive alias": lambda t: t + "note: &r [*r]\n",
    "merge key": lambda t: t + "<<: {note: 1}\n",
    "duplicate top-level key": lambda t: t + next(line for line in t.splitlines() if line[:1].isalpha()) + "\n",
    "duplicate nested key": lambda t: t + "note: {a: 1, a: 2}\n",
    "number as a key": lambda t: t + "1: one\n",
    "null as a key": lambda t: t + "~: nothing\n",
    "boolean as a key": lambda t: t + "yes: please\n",
    "list as a key": lambda t: t + "? [a, b]\n: c\n",
    "nesting bomb": lambda t: t + "note: " + "[" * 100 + "]" * 100 + "\n",
    "deeper nesting bomb": lambda t: t + "note: " + "[" * 100_000 + "]" * 100_000 + "\n",
    "two documents": lambda t: t + "---\n" + t,
    "unclosed list": lambda t: t + "note: [a, b\n",
    "tab indentation": lambda t: t + "note:\n\tx: 1\n",
    "unknown field": lambda t: t + "colour: red\n",
    "huge": lambda t: t + "# " + "x" * (5 << 20) + "\n",
}

WRONG_VALUES = (None, 7, True, "text", ["x", 7], {"k": "v"})


def _json_type(value) -> str:
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def _paths(value, path=()):
    """Every (path, value) inside a parsed document, the document itself excluded; of a list, its first item
    (a list's items share one schema)."""
    items = value.items() if isinstance(value, dict) else list(enumerate(value))[:1] if isinstance(value, list) else ()
    for key, sub in items:
        yield path + (key,), sub
        yield from _paths(sub, path + (key,))


def _replace(doc, path, value):
    if not path:
        return value
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    copy[path[0]] = _replace(doc[path[0]], path[1:], value)
    return copy


def _dump(doc) -> str:
    return yaml.dump(doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)


def _shown(path) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def structural(doc: dict) -> dict[str, str]:
    """Every field replaced by a value of another type (the wrong values taken in turn, so each kind of
    field meets each of them somewhere), and a field no schema knows added to every mapping."""
    cases, turn = {}, 0
    for path, old in _paths(doc):
        wrong = [v for v in WRONG_VALUES if _json_type(v) != _json_type(old)]
        new = wrong[turn % len(wrong)]
        turn += 1
        cases[f"{_shown(path)} = {new!r}"] = _dump(_replace(doc, path, new))
    for path, old in [((), doc), *_paths(doc)]:
        if isinstance(old, dict):
            cases[f"{_shown(path) or '(top level)'} + colour"] = _dump(_replace(doc, path, {**old, "colour": "red"}))
    return cases


# Damage the spec legitimately accepts: in a preregistration a '---' line closes the front matter, so a
# second document there is body text; mcp.write.arguments maps the server tool's own argument names, so any
# name is a field the schema must accept (a wrong one is the server's to refuse, which `arm check` exercises).
VALID = {("prereg", "two documents"), ("arm", "field mcp.write.arguments + colour")}


def _frame(kind: Kind) -> tuple[str, Callable[[str | bytes], bytes]]:
    """The YAML text of the shipped spec, and how damaged YAML becomes the file's bytes."""
    if kind.name in ("grid", "suite"):
        return {"grid": GRID, "suite": SUITE}[kind.name], lambda y: y if isinstance(y, bytes) else y.encode()
    original = (REPO / kind.file).read_text()
    if kind.name != "prereg":
        return original, lambda y: y if isinstance(y, bytes) else y.encode()
    close = original.index("\n---\n", 4)
    front, rest = original[4:close + 1], original[close + 1:].encode()
    return front, lambda y: b"---\n" + (y if isinstance(y, bytes) else y.encode()) + rest


@cache
def damaged_files(kind: Kind) -> dict[str, bytes]:
    """case -> the file's damaged bytes, for every case of one kind."""
    base, to_file = _frame(kind)
    cases = {name: damage(base) for name, damage in GENERIC.items()}
    cases |= {f"field {name}": text for name, text in structural(yaml.safe_load(base)).items()}
    return {name: to_file(text) for name, text in cases.items() if (kind.name, name) not in VALID}


@pytest.fixture(scope="module")
def fuzz_project(tmp_path_factory) -> Path:
    """One private copy of the specs for the module (each case restores the file it damaged). What an image build
    resolves beside an arm's spec (GENERATED: pydeps/, node_modules/, thousands of files once built) is left out: each
    case walks the whole copy twice to prove nothing was written, and those walks were half of the file's time."""
    root = tmp_path_factory.mktemp("fuzz") / "project"
    skip = shutil.ignore_patterns(*GENERATED, "*.egg-info", "build")
    for sub in ("tasks", "arms", "corpus", "preregistration"):
        shutil.copytree(REPO / sub, root / sub, ignore=skip)
    (root / "tasks" / "fuzzsuite").mkdir()  # a second suite (no tasks yet), whose suite.yaml the suite cases damage
    (root / "tasks" / "fuzzsuite" / "suite.yaml").write_text(SUITE)
    return root


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under root with its size and mtime."""
    tree, folders = {}, [str(root)]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                st = entry.stat(follow_symlinks=False)
                tree[entry.path] = (st.st_size, st.st_mtime_ns)
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
    return tree


def _no_engine(*args, **kwargs):
    raise AssertionError("the command reached for the Docker engine before refusing the spec")


@pytest.mark.parametrize("kind, case", [pytest.param(kind, case, id=f"{kind.name}: {case}")
                                        for kind in KINDS for case in damaged_files(kind)])
def test_malformed_spec_is_one_line_exit_2_and_writes_nothing(fuzz_project, kind, case, monkeypatch, capsys):
    import docker

    target = fuzz_project / kind.file
    original = target.read_bytes() if target.exists() else None
    target.write_bytes(damaged_files(kind)[case])
    monkeypatch.setattr(docker, "from_env", _no_engine)
    monkeypatch.setattr(docker, "DockerClient", _no_engine)
    monkeypatch.setenv("MEMGRID_ROOT", str(fuzz_project))
    monkeypatch.chdir(fuzz_project)
    monkeypatch.setattr(sys, "argv", ["memgrid", *(a.replace("{file}", str(target)) for a in kind.argv)])
    before = _tree(fuzz_project)
    try:
        with pytest.raises(SystemExit) as exit_:
            main()
    finally:
        if original is None:
            target.unlink()
        else:
            target.write_bytes(original)
    out, err = capsys.readouterr()
    lines = (out + err).strip().splitlines()
    assert exit_.value.code == 2, out + err
    assert len(lines) == 1, out + err
    assert "Traceback" not in out + err
    line = lines[0]
    assert line.startswith("memgrid: ") and "fix:" in line, line
    assert target.name in line, line
    after = _tree(fuzz_project)
    after[str(target)] = before[str(target)]  # the damaged file itself, restored above
    assert after == before, "the command wrote to the project before refusing the spec"


@pytest.mark.parametrize("kind", [k for k in KINDS if k.name in ("grid", "task")], ids=lambda k: k.name)
def test_console_script_prints_one_line_for_an_alias_bomb(fuzz_project, kind, tmp_path):
    """The installed `memgrid` itself, in a fresh process: no pretty traceback, no engine (none is reachable)."""
    target = fuzz_project / kind.file
    original = target.read_bytes() if target.exists() else None
    target.write_bytes(damaged_files(kind)["alias bomb in a spec"])
    env = {**os.environ, "MEMGRID_ROOT": str(fuzz_project), "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock"}
    try:
        proc = subprocess.run([str(Path(sys.executable).parent / "memgrid"),
                               *(a.replace("{file}", str(target)) for a in kind.argv)],
                              cwd=fuzz_project, env=env, capture_output=True, text=True, timeout=60)
    finally:
        if original is None:
            target.unlink()
        else:
            target.write_bytes(original)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1, proc.stdout + proc.stderr
    assert f"{target.name}: line" in proc.stderr and "anchor" in proc.stderr, proc.stderr
    assert not (fuzz_project / "runs").exists()
