"""`memgrid arm add NAME --from-npm PKG@VER | --from-pypi PKG==VER`, through the CLI as a vendor runs it: a real
published MCP server scaffolded from its registry, the TODOs filled in as its maker would, then `memgrid arm check`.

The npm example is the version arms/server_memory pins; the PyPI one is agentmemdb, a small SQLite memory server
(its only dependency is the mcp SDK 1.x) whose hits come back as JSON text.
"""

import zipfile

import pytest
import yaml

from conftest import REPO
from runner.env.images import read_lock, read_pins
from test_armcheck import check, memgrid, problems

NPM = "@modelcontextprotocol/server-memory@2026.8.31"
PYPI = "agentmemdb==0.1.0"


def fill(path, *replacements: tuple[str, str]) -> None:
    """Edit a scaffolded file as a vendor does: each TODO replaced in place, the comments kept."""
    text = path.read_text()
    for old, new in replacements:
        assert old in text, (path.name, old)
        text = text.replace(old, new)
    path.write_text(text)


def fill_search(arm, tool: str, *lines: tuple[str, str]) -> None:
    fill(arm / "arm.yaml", ("TODO_SEARCH_TOOL", tool), *lines)


def fill_write(arm, body: str, store_format: str) -> None:
    """ingest.py's write(): the stub's body (its TODO comments and the raise) replaced by the product's calls."""
    text = (arm / "ingest.py").read_text()
    start = text.index("        # TODO: call the product's write tool")
    end = text.index("\n\n\nif __name__")
    fill(arm / "ingest.py", (text[start:end], body.rstrip("\n")), ('store_format="TODO"', f'store_format="{store_format}"'))


def assert_checked(proc, name: str) -> None:
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    assert "6 of 6 sessions stored" in out and f"{name}: connected" in out, out
    assert out.rstrip().splitlines()[-1].startswith(f"arm check {name}: ok"), out


def test_npm_server_scaffolded_pinned_and_checked_once_filled(engine, images, project, run_id, no_leftovers):
    added = memgrid(project, "arm", "add", "graph_memory", "--from-npm", NPM)
    assert added.returncode == 0, added.stderr
    arm = project / "arms" / "graph_memory"
    assert sorted(p.name for p in arm.iterdir()) == ["Dockerfile", "VENDOR.md", "arm.yaml", "ingest.py", "package-lock.json",
                                                     "package.json", "server.sh"]
    # the lock npm wrote holds the registry's integrity, the same as the shipped arm's for the same version
    ours, shipped = read_lock(arm / "package-lock.json"), read_lock(REPO / "arms/server_memory/package-lock.json")
    key = "node_modules/@modelcontextprotocol/server-memory"
    assert ours[key]["integrity"] == shipped[key]["integrity"] and set(ours) == set(shipped)
    assert "FROM ${BASE}" in (arm / "Dockerfile").read_text()
    assert "server-memory/dist/index.js" in (arm / "server.sh").read_text()
    assert yaml.safe_load((arm / "arm.yaml").read_text())["mcp"]["command"] == ["graph_memory-server", "{store}"]

    # the first check builds the image and stops at the stub, naming the tools the server offers
    first = check(project, "graph_memory", run_id)
    assert first.returncode == 1 and "FAIL ingest" in first.stdout, first.stdout + first.stderr
    [problem] = problems(first)
    assert "write() in arms/graph_memory/ingest.py is not filled in yet; the server lists:" in problem, problem
    assert "create_entities" in problem and "search_nodes" in problem, problem

    # what its maker fills in: where the product keeps its store, its write tool, its search
    fill(arm / "server.sh", ('export HOME="$store"\n', 'export HOME="$store"\nexport MEMORY_FILE_PATH="$store/memory.jsonl"\n'))
    fill_write(arm, '''
        entities = [{"name": s.id, "entityType": "session", "observations": [l for l in s.text.splitlines() if l.strip()]}
                    for s in sessions]
        await call(server, "create_entities", {"entities": entities}, "the sessions")
        graph = await call(server, "read_graph", {}, "the count")
        return len(graph.structured_content["entities"])
''', "jsonl")
    fill_search(arm, "search_nodes", ("query: prompt", "query: keywords"), ("TODO_HITS_KEY", "entities"),
                ("TODO_ID_FIELD", "name"), ("TODO_TEXT_FIELD", "observations"))
    proc = check(project, "graph_memory", run_id)
    assert_checked(proc, "graph_memory")
    assert "the session it names: rank 1" in proc.stdout, proc.stdout


def test_pypi_server_scaffolded_pinned_and_checked_once_filled(engine, images, project, run_id, no_leftovers):
    added = memgrid(project, "arm", "add", "memdb", "--from-pypi", PYPI)
    assert added.returncode == 0, added.stderr
    arm = project / "arms" / "memdb"
    requirements = arm / "requirements.txt"
    pins = read_pins(requirements)  # a complete lock, every line hashed (pip's hash-checking mode)
    assert pins["agentmemdb"] == "0.1.0" and pins["mcp"].startswith("1.")
    assert all("--hash=sha256:" in line for line in requirements.read_text().splitlines() if "==" in line and line[0] != "#")
    assert "from agentmemdb.cli import main" in (arm / "server.sh").read_text()

    # agentmemdb keeps its database under the home folder, which server.sh makes the store: only ingest and search
    fill_write(arm, '''
        for s in sessions:
            saved = await call(server, "save_memory", {"topic": s.id, "content": s.text, "category": "conversation"},
                               f"session {s.id}")
            if "error" in json.loads(said(saved)):  # it refuses in its answer, not as an error result
                raise RuntimeError(f"save_memory refused session {s.id}: {said(saved)}")
        stats = await call(server, "get_stats", {}, "the count")
        return json.loads(said(stats))["total_memories"]
''', "sqlite")
    fill(arm / "ingest.py", ("import sys\n", "import json\nimport sys\n"))
    fill_search(arm, "search_memory", ('arguments: {query: "{query}"}', 'arguments: {query: "{query}", limit: "{k}"}'),
                ("TODO_HITS_KEY", "results"), ("TODO_ID_FIELD", "topic"), ("TODO_TEXT_FIELD", "topic, snippet"))
    proc = check(project, "memdb", run_id)
    assert_checked(proc, "memdb")


@pytest.mark.parametrize("args, says", [
    (("--from-npm", "memgrid-test-no-such-package-7f3a@1.0.0"), "the npm registry has no package memgrid-test-no-such"),
    (("--from-npm", "@modelcontextprotocol/server-memory@9.9.9"), "has no version 9.9.9: fix: pick a published one"),
    (("--from-npm", "@modelcontextprotocol/server-memory"), "is not PACKAGE@VERSION with an exact version"),
    (("--from-pypi", "memgrid-test-no-such-package-7f3a==1.0.0"), "PyPI has no release of memgrid-test-no-such"),
    (("--from-pypi", "agentmemdb==9.9.9"), "agentmemdb has no version 9.9.9 for the images' python3"),
    (("--from-pypi", "agentmemdb"), "is not PACKAGE==VERSION"),
    (("--from-npm", NPM, "--from-pypi", PYPI), "an arm wraps one package"),
    (("--kind", "files", "--from-pypi", PYPI), "a published server makes an mcp arm"),
])
def test_bad_input_is_one_line_and_writes_nothing(project, args, says):
    proc = memgrid(project, "arm", "add", "demo_pub", *args)
    assert proc.returncode == 2 and says in proc.stderr and ": fix: " in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert sorted(p.name for p in (project / "arms").iterdir()) == sorted(p.name for p in (REPO / "arms").iterdir())


def test_a_name_clash_is_refused_before_the_registry_is_asked(project, monkeypatch):
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")  # would fail differently if it were asked
    proc = memgrid(project, "arm", "add", "server_memory", "--from-npm", NPM)
    assert proc.returncode == 2 and proc.stderr.startswith("memgrid: arms/server_memory: already exists: fix:"), proc.stderr


def test_no_network_to_the_registry_is_named(project, monkeypatch):
    """Both clients pointed at a closed port on loopback: the line says the registry did not answer."""
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")
    monkeypatch.setenv("npm_config_fetch_retries", "0")  # npm's default retries with back-off take a minute
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")  # no local mirror or wheel folder to fall back on
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_RETRIES", "1")  # with none pip does not say why it found nothing
    for flag, spec in (("--from-npm", NPM), ("--from-pypi", PYPI)):
        proc = memgrid(project, "arm", "add", "demo_pub", flag, spec)
        assert proc.returncode == 2, proc.stderr
        assert f"memgrid: {flag} {spec}: the registry did not answer" in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and not (project / "arms" / "demo_pub").exists()


def local_index(root, name: str, requires: tuple[str, ...] = ()):
    """A package index on disk (pip's simple layout) holding one wheel of `name` 1.0, with no console script."""
    dist, info = name.replace("-", "_"), f"{name.replace('-', '_')}-1.0.dist-info"
    wheel = root / name / f"{dist}-1.0-py3-none-any.whl"
    wheel.parent.mkdir(parents=True)
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(f"{dist}/__init__.py", "")
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
                                       + "".join(f"Requires-Dist: {r}\n" for r in requires))
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: memgrid-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    (wheel.parent / "index.html").write_text(f'<a href="{wheel.name}">{wheel.name}</a>\n')
    return root


@pytest.mark.parametrize("requires, says", [
    ((), "memgrid-probe==1.0: the package installs no command (console script) to start its server"),
    (("memgrid-absent-dep",), "memgrid-probe==1.0: its dependency memgrid-absent-dep has no release for the images' python3"),
])
def test_a_pypi_package_that_cannot_serve_is_named(project, tmp_path, monkeypatch, requires, says):
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_INDEX_URL", local_index(tmp_path / "index", "memgrid-probe", requires).as_uri())
    proc = memgrid(project, "arm", "add", "demo_pub", "--from-pypi", "memgrid-probe==1.0")
    assert proc.returncode == 2 and says in proc.stderr and ": fix: " in proc.stderr, proc.stderr
    assert not (project / "arms" / "demo_pub").exists()


def test_an_npm_package_without_a_command_or_npm_itself_is_named(project, monkeypatch):
    proc = memgrid(project, "arm", "add", "demo_pub", "--from-npm", "@modelcontextprotocol/sdk@1.32.2")  # a library
    assert proc.returncode == 2 and "declares no command (package.json 'bin') to start its server" in proc.stderr, proc.stderr
    monkeypatch.setenv("PATH", "/nonexistent")
    proc = memgrid(project, "arm", "add", "demo_pub", "--from-npm", NPM)
    assert proc.returncode == 2 and "npm is not installed on this machine: fix:" in proc.stderr, proc.stderr
    assert not (project / "arms" / "demo_pub").exists()
