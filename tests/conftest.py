import atexit
import contextlib
import gzip
import io
import json
import os
import re
import shutil
import tarfile
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from runner.env.engine import connect
from runner.errors import EngineError
from runner.env.containers import RUN_LABEL
from runner.env.images import PYDEPS_DIR

REPO = Path(__file__).resolve().parent.parent
TEST_RUN_PREFIX = "pytest-"

# The store cache (runner/arms/store_cache.py) of the session's own fixtures; each test gets an empty one of its own
# (fresh_store_cache). A store cached by `make grid` or an earlier session must never stand in for an ingest a test
# exercises, nor one test's store decide whether another test ingests.
SESSION_STORE_CACHE = tempfile.mkdtemp(prefix="memgrid-test-store-cache-")
os.environ["MEMGRID_CACHE"] = SESSION_STORE_CACHE
atexit.register(shutil.rmtree, SESSION_STORE_CACHE, True)


@pytest.fixture(scope="module")
def file_store_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("file-store-cache")


@pytest.fixture(autouse=True)
def fresh_store_cache(request, tmp_path_factory, monkeypatch):
    """An empty store cache a test; one a file for a file marked store_cache_per_file, whose tests run the same
    arm's store again and again and none of them asserts how its store was made but the first it runs (a file runs
    whole, in order, on one worker): each store is ingested once in the file instead of once a test."""
    if request.node.get_closest_marker("store_cache_per_file"):
        monkeypatch.setenv("MEMGRID_CACHE", str(request.getfixturevalue("file_store_cache")))
    else:
        monkeypatch.setenv("MEMGRID_CACHE", str(tmp_path_factory.mktemp("store-cache")))


def pytest_terminal_summary(terminalreporter, config):
    """With --durations, the slowest test files too: a file's seconds are its tests' setup, call and teardown on
    one worker (a module fixture counts once, in the first test's setup), so a change that slows CI shows in the
    file that pays for it, whichever of its tests the fixture's cost lands on."""
    if config.option.durations is None:
        return
    by_file: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) in ("setup", "call", "teardown"):
                path = report.nodeid.split("::", 1)[0]
                by_file[path] = by_file.get(path, 0.0) + report.duration
    if not by_file:
        return
    slowest = sorted(by_file.items(), key=lambda kv: -kv[1])
    shown = slowest if config.option.durations == 0 else slowest[:config.option.durations]
    terminalreporter.write_sep("=", f"slowest {len(shown)} test files (seconds of one worker)")
    for path, seconds in shown:
        terminalreporter.write_line(f"{seconds:9.1f}s  {path}")
    terminalreporter.write_line(f"{sum(by_file.values()):9.1f}s  all {len(by_file)} files")


def pytest_collection_modifyitems(items):
    for item in items:
        if "engine" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.docker)


@pytest.fixture(scope="session")
def engine():
    try:
        client = connect(timeout=120)
    except EngineError as e:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but no Docker engine answers: {e}")
        pytest.skip(f"no Docker engine: {e}")
    yield client
    # Only this session's runs: another pytest session on the same engine keeps its containers.
    leftovers = [c for c in client.containers.list(all=True, ignore_removed=True, filters={"label": RUN_LABEL})
                 if c.labels.get(RUN_LABEL, "").startswith(tuple(ISSUED_RUN_IDS) or ("\0",))]
    for c in leftovers:
        c.remove(force=True, v=True)
    assert not leftovers, f"containers survived the suite: {[c.labels for c in leftovers]}"


SEED = 0


@pytest.fixture(scope="session")
def built(tmp_path_factory, worker_id):
    """All five conditions of seed 0 at full scale, built once for the whole run: (settings, tasks, build_dir,
    digests). Under pytest-xdist the workers share one build: the first to ask builds it under a lock, the
    others wait and read it (each building its own cost every worker the same 12 s)."""
    import json

    from runner.corpus.build import build, load_settings
    from runner.hostlock import host_lock
    from runner.plan.spec import CONDITIONS, load_all_tasks

    settings = load_settings(REPO)
    tasks = list(load_all_tasks(REPO).values())
    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent  # the folder every worker's base temp folder sits in
    build_dir, written = shared / "corpus", shared / "corpus-digests.json"
    with host_lock(build_dir, "test-corpus"):
        if not written.is_file():
            digests = build(settings, tasks, CONDITIONS, (SEED,), build_dir, log=lambda m: None)
            written.write_text(json.dumps(digests))
    digests = {condition: {int(seed): d for seed, d in by_seed.items()}
               for condition, by_seed in json.loads(written.read_text()).items()}
    return settings, tasks, build_dir, digests


@pytest.fixture(scope="session")
def images(engine):
    from runner.env.images import ensure_images

    return ensure_images(engine, log=lambda m: None)


ISSUED_RUN_IDS: set[str] = set()


@pytest.fixture
def run_id():
    issued = f"{TEST_RUN_PREFIX}{uuid.uuid4().hex[:10]}"
    ISSUED_RUN_IDS.add(issued)
    return issued


# The haystack of a project copy's corpus: documents a condition and seed, where corpus/corpus.yaml has 4,900. What
# the tests of a copy prove (gate, discards, stores, resume, suites) does not depend on the haystack's size, and
# building and ingesting the full one cost each such test half its time; the full-size corpus is tested where it
# is built from the repository's own settings (`built`, tests/test_corpus.py).
PROJECT_SCALE = 300


@pytest.fixture
def project(request, tmp_path) -> Path:
    """A private copy of the shipped tasks and arms that a test may change; its corpus at PROJECT_SCALE."""
    return copy_project(tmp_path / "project", engine=request.node.get_closest_marker("docker") is not None)


def copy_project(root: Path, engine: bool) -> Path:
    """The project fixture's copy at `root` (also for a module's shared run); `engine`: for a test that runs cells."""
    # node_modules and assets (hundreds of MB for a product) are installed again from their pins if a test builds
    # them. The resolved packages (pydeps/) likewise, but for memgrid's own arms under a test with an engine: the
    # third-party products' (VENDOR.md: 16,600 files) were most of each copy's second, and no test runs a product
    # from its copy; a test with no engine (not marked docker) builds no image, so it gets none at all.
    def skipped(folder: str, names: list[str]) -> set[str]:
        resolved = PYDEPS_DIR in names and (not engine or "VENDOR.md" in names)
        return {n for n in names if n in ("__pycache__", "node_modules", "assets") or (resolved and n == PYDEPS_DIR)}

    for sub in ("tasks", "arms"):
        shutil.copytree(REPO / sub, root / sub, ignore=skipped, copy_function=_link_resolved_wheels)
    # the corpus settings a grid of the copy builds its corpus from, and a new suite's are made from (memgrid task
    # import); no corpus is built here
    (root / "corpus").mkdir()
    settings = (REPO / "corpus" / "corpus.yaml").read_text()
    small, changed = re.subn(r"^scale:\s*\d+", f"scale: {PROJECT_SCALE}", settings, count=1, flags=re.M)
    assert changed, "corpus/corpus.yaml has no 'scale:' line to set"
    (root / "corpus" / "corpus.yaml").write_text(small)
    return root


def _link_resolved_wheels(src: str, dst: str) -> None:
    """Hard-links the wheels of a resolved pydeps/ (700 MB for the product arms; no test edits them), so six
    hundred project copies cost no disk; everything else is a real copy a test may change."""
    if "pydeps" in Path(src).parts:
        try:
            os.link(src, dst)
            return
        except OSError:  # another file system: copy
            pass
    shutil.copy2(src, dst)


@pytest.fixture
def no_leftovers(engine, run_id):
    """Fails the test if any container or network of its run survives it (cleaning them up either way)."""
    yield
    assert_nothing_left(engine, run_id)


def assert_nothing_left(engine, run_id: str) -> None:
    """Removes every container and network of the run, then fails if there was any."""
    left = engine.containers.list(all=True, ignore_removed=True, filters={"label": f"{RUN_LABEL}={run_id}"})
    for c in left:
        c.remove(force=True, v=True)
    networks = engine.api.networks(filters={"label": f"{RUN_LABEL}={run_id}"})
    for n in networks:
        engine.api.remove_network(n["Id"])
    assert not left, f"{len(left)} containers of run {run_id} survived the test"
    assert not networks, f"{len(networks)} networks of run {run_id} survived the test"


def hosted_project(tmp_path, monkeypatch, fmt: str) -> Path:
    """A project whose tasks/ holds only tests/data/<fmt> (a fixture of our own in that benchmark's layout) imported
    as suite <fmt> by the format's own import, and memgrid pointed at it."""
    from runner.sources.registry import source_format

    root = tmp_path / "hosted"
    (root / "tasks").mkdir(parents=True)
    source_format(fmt).import_source(REPO / "tests" / "data" / fmt, root, fmt, log=lambda m: None)
    monkeypatch.setenv("MEMGRID_ROOT", str(root))
    return root


@pytest.fixture
def locomo_project(tmp_path, monkeypatch) -> Path:
    return hosted_project(tmp_path, monkeypatch, "locomo")


@pytest.fixture
def memora_project(tmp_path, monkeypatch) -> Path:
    return hosted_project(tmp_path, monkeypatch, "memora")


def write_grid(path: Path, *, tasks="all", arms=("bare",), agents=("floor", "ceiling"), seeds=1,
               conditions=("present",)) -> Path:
    import yaml

    spec = {"name": "test", "tasks": tasks if tasks == "all" else list(tasks), "arms": list(arms),
            "agents": list(agents), "seeds": seeds, "conditions": list(conditions)}
    path.write_text(yaml.safe_dump(spec))
    return path


def run_grid_in_process(engine, images, project: Path, runs_dir: Path, run_id: str, grid_path: Path, concurrency=2):
    """The same path `memgrid grid` takes, minus the CLI: returns (summary, ledger rows)."""
    from runner.results.ledger import Ledger
    from runner.exec.run import execute, lock_document, open_run, plan_run
    from runner.plan.spec import load_all_arms, load_all_tasks, load_grid
    from runner.exec.trial import TrialContext
    from runner.protocols.registry import protocol_named

    tasks, arms = load_all_tasks(project), load_all_arms(project)
    plan = plan_run(load_grid(grid_path), grid_path, tasks, arms, images, runs_dir, run_id)
    ledger = open_run(plan, lock_document(plan, images, engine, project))
    summary = execute(TrialContext(engine, run_id, plan.run_dir, images, tasks, arms,
                                   protocol=protocol_named(plan.grid.protocol)), ledger, plan.cells,
                      concurrency, show_progress=False)
    return summary, Ledger(plan.run_dir).rows()


def scripted_model_plays(monkeypatch, **extra) -> None:
    """A coding cell's scripted model plays its script with `extra` fields: a hostile opening (`shell`, `subagent`),
    a window (`context_headroom_tokens`)."""
    from runner.agents import model_cli

    build = model_cli.build_script
    monkeypatch.setattr(model_cli, "build_script", lambda *a: {**build(*a), **extra})


@contextlib.contextmanager
def model_upstream(engine, images, run_id: str, script: dict | None = None, env: dict | None = None):
    """A scripted model server this test owns on this machine's bridge network, standing in for a live provider
    (the gateway forwards to it as to one); yields (its container, its URL). Its run label is not the run's own:
    the run removes those."""
    from runner.env.images import ensure_derived

    image = ensure_derived(engine, "model", images.base, log=lambda m: None)
    upstream = engine.containers.create(image.tag, ["memgrid-model-server", "8080"], network="bridge",
                                        environment=env or {}, labels={RUN_LABEL: f"{run_id}-upstream"})
    try:
        if script is not None:
            data = json.dumps(script).encode()
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as tar:
                info = tarfile.TarInfo("script.json")
                info.size, info.mode = len(data), 0o444
                tar.addfile(info, io.BytesIO(data))
            upstream.put_archive("/srv/script", buf.getvalue())
        upstream.start()
        deadline = time.monotonic() + 30
        while b"ready" not in upstream.logs() and time.monotonic() < deadline:
            time.sleep(0.05)
        upstream.reload()
        yield upstream, f"http://{upstream.attrs['NetworkSettings']['Networks']['bridge']['IPAddress']}:8080"
    finally:
        upstream.remove(force=True)


def received_requests(upstream) -> bytes:
    """The upstream model server's record of the requests it answered."""
    stream, _ = upstream.get_archive("/srv/record/requests.jsonl")
    return b"".join(stream)


def files_holding(run_dir: Path, secret: str) -> tuple[list[Path], int]:
    """The files of a run folder (gzip records read decompressed) that contain `secret`, and how many were read."""
    found, scanned = [], 0
    for path in run_dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            if path.suffix == ".gz":
                data = gzip.decompress(data)
            if secret.encode() in data:
                found.append(path)
            scanned += 1
    return found, scanned


def fake_checkout(root: Path, commit: str, url: str) -> Path:
    """`root` as a git checkout of `url` at `commit` reads to an import (its .git's HEAD, ref and origin; no git run)."""
    (root / ".git" / "refs" / "heads").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".git" / "refs" / "heads" / "main").write_text(commit + "\n")
    (root / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {url}\n')
    return root
