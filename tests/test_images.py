"""Images: Python packages resolved on the host into the build contexts (pydeps), the sandbox image's
mcp SDK for `python3 -IS`, the recall arm image (ingest + MCP server over stdio, inside the
container), and content-addressed tags that stay put when nothing changed."""

import io
import json
import tarfile
import time
from importlib.metadata import version
from pathlib import Path

import pytest

from runner.errors import EngineError
from runner.env.images import (IMAGES_DIR, PYDEPS_DIR, PYDEPS_STAMP, ImageRef, arm_image_needed, arm_tag,
                           ensure_arm_image, ensure_images, ensure_pydeps, existing_arm_image, existing_images,
                           installed_dists, pydeps_current, read_pins)
from runner.env.containers import RUN_LABEL

REPO = Path(__file__).resolve().parent.parent
RECALL = REPO / "arms" / "recall"
AGENT_UID = 1000


def tar_of(files: dict[str, bytes]) -> bytes:
    """A tar of these files and their folders, owned by the sandbox's agent user."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        folders = sorted({p for name in files for p in map(str, Path(name).parents) if p != "."})
        for folder in folders:
            info = tarfile.TarInfo(folder)
            info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, 0o755, AGENT_UID, AGENT_UID
            tar.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.uid, info.gid = len(data), 0o644, AGENT_UID, AGENT_UID
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def run_in(engine, image: str, run_id: str, command: list[str], files: dict[str, bytes] | None = None,
           timeout: int = 120) -> tuple[int, str, str]:
    """Run one throwaway container (no network, the test's run label) to its end; always removed."""
    container = engine.containers.create(image, command, labels={RUN_LABEL: run_id}, network_mode="none")
    try:
        if files:
            assert container.put_archive("/tmp", tar_of(files))
        container.start()
        status = container.wait(timeout=timeout)["StatusCode"]
        return (status, container.logs(stdout=True, stderr=False).decode(),
                container.logs(stdout=False, stderr=True).decode())
    finally:
        container.remove(force=True)


# ---- pydeps on the host (no engine) -------------------------------------------------------------

def test_sandbox_lock_pins_the_controllers_mcp():
    pins = read_pins(IMAGES_DIR / "sandbox" / "requirements.txt")
    assert pins["mcp"] == version("mcp")
    recall = read_pins(RECALL / "requirements.txt")
    assert set(recall) == {"bm25s", "numpy"} and not set(recall) & set(pins)  # nothing shadows the sandbox's tree


def test_pydeps_resolved_once_then_stamped(tmp_path):
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "requirements.txt").write_text("typing-extensions==4.16.0\n")
    logs = []
    assert not pydeps_current(context)
    target = ensure_pydeps(context, logs.append)
    assert target == context / PYDEPS_DIR and pydeps_current(context)
    assert installed_dists(target) == {"typing-extensions": "4.16.0"}
    assert (target / PYDEPS_STAMP).is_file() and not (target / "bin").exists()
    assert not list(target.rglob("*.pyc"))  # compiled in the image, by the image's python3
    assert any("resolving" in m for m in logs)

    logs.clear()
    stamp = (target / PYDEPS_STAMP).stat().st_mtime_ns
    assert ensure_pydeps(context, logs.append) == target
    assert logs == [] and (target / PYDEPS_STAMP).stat().st_mtime_ns == stamp  # the stamp matched: no pip

    (context / "requirements.txt").write_text("typing-extensions==4.16.0\nannotated-types==0.8.0\n")
    assert not pydeps_current(context)
    ensure_pydeps(context, logs.append)
    assert installed_dists(target) == {"typing-extensions": "4.16.0", "annotated-types": "0.8.0"}


def test_pydeps_do_not_depend_on_where_the_checkout_lives(tmp_path):
    """pip writes console scripts with the host interpreter's path in their shebang and lists them in
    RECORD; left in, every checkout path would give another image tag (and a reproduction elsewhere
    would report drift)."""
    import sys

    context = tmp_path / "ctx"
    context.mkdir()
    (context / "requirements.txt").write_text("idna==3.20\n")  # ships a console script
    target = ensure_pydeps(context, lambda m: None)
    assert not (target / "bin").exists()
    records = "".join(p.read_text() for p in target.glob("*.dist-info/RECORD"))
    assert "idna/core.py" in records and "../../bin/" not in records
    host = sys.executable.encode()
    assert not [p for p in target.rglob("*") if p.is_file() and host in p.read_bytes()]


def test_pydeps_refuses_an_incomplete_lock(tmp_path):
    context = tmp_path / "ctx"
    context.mkdir()
    (context / "requirements.txt").write_text("typing-inspection==0.4.5\n")  # needs typing-extensions
    with pytest.raises(EngineError, match="not a complete lock: pip also installed typing-extensions=="):
        ensure_pydeps(context, lambda m: None)
    assert not (context / PYDEPS_DIR).exists()
    (context / "requirements.txt").write_text("mcp>=2\n")
    with pytest.raises(EngineError, match="not an exact pin"):
        ensure_pydeps(context, lambda m: None)


def test_no_requirements_no_pydeps(tmp_path):
    assert ensure_pydeps(tmp_path, lambda m: None) is None and pydeps_current(tmp_path)


def test_arm_tag_hashes_the_context_and_the_sandbox(tmp_path):
    arm = tmp_path / "demo"
    (arm / PYDEPS_DIR / "pkg").mkdir(parents=True)
    (arm / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\n")
    (arm / PYDEPS_DIR / "pkg" / "__init__.py").write_text("x = 1\n")
    sandbox = ImageRef("sandbox", "memgrid-sandbox:abc", "sha256:" + "1" * 64)
    tag = arm_tag(arm, sandbox)
    assert tag.startswith("memgrid-arm-demo:") and arm_tag(arm, sandbox) == tag
    # caches and a local install's metadata are neither hashed nor sent
    (arm / PYDEPS_DIR / "pkg" / "__pycache__").mkdir()
    (arm / PYDEPS_DIR / "pkg" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(b"\0")
    (arm / "demo.egg-info").mkdir()
    (arm / "demo.egg-info" / "PKG-INFO").write_text("Name: demo\n")
    assert arm_tag(arm, sandbox) == tag
    (arm / PYDEPS_DIR / "pkg" / "__init__.py").write_text("x = 2\n")
    assert arm_tag(arm, sandbox) != tag
    assert arm_tag(arm, ImageRef("sandbox", "memgrid-sandbox:def", "sha256:" + "2" * 64)) != arm_tag(arm, sandbox)


def test_arm_image_needed():
    assert arm_image_needed(RECALL)
    assert not arm_image_needed(REPO / "arms" / "bare")


# ---- images (Docker engine) ---------------------------------------------------------------------

def test_sandbox_imports_mcp_isolated(engine, images, run_id, no_leftovers):
    probe = ("import json, os, sys; sys.path.insert(0, '/opt/memgrid/pydeps'); import mcp, mcp.client.stdio; "
             "from importlib.metadata import version; "
             "print(json.dumps({'version': version('mcp'), 'file': mcp.__file__, 'uid': os.getuid(), "
             "'isolated': sys.flags.isolated, 'no_site': sys.flags.no_site}))")
    status, out, err = run_in(engine, images.sandbox.tag, run_id, ["/usr/bin/python3", "-IS", "-c", probe])
    assert status == 0, err
    got = json.loads(out)
    assert got == {"version": version("mcp"), "file": "/opt/memgrid/pydeps/mcp/__init__.py", "uid": AGENT_UID,
                   "isolated": 1, "no_site": 1}
    # without the folder on sys.path the isolated interpreter does not see the SDK
    status, _, err = run_in(engine, images.sandbox.tag, run_id, ["/usr/bin/python3", "-IS", "-c", "import mcp"])
    assert status == 1 and "No module named 'mcp'" in err


SESSIONS = {
    "s-rounding": ("2024-01-15T14:00:00Z", "Finance says invoice cents are off by one sometimes.",
                   "New rule: banker's rounding (ROUND_HALF_EVEN) replaces half-up for invoice totals."),
    "s-logging": ("2024-01-03T09:00:00Z", "The request logger dumps all headers.",
                  "Mask Authorization and Cookie headers before logging."),
    "s-docs": ("2024-02-02T17:45:00Z", "The docs build fails on a fresh clone.", "Pin sphinx below the next major."),
}

CLIENT = '''
import json, os, sys
sys.path[:0] = ["/opt/memgrid/pydeps"]
import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

async def main():
    params = StdioServerParameters(command="recall-server", args=["--store", "/tmp/store"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            tools = await session.list_tools()
            found = await session.call_tool("search", {"query": "invoice totals rounding rule", "k": 2})
            print(json.dumps({"server": init.server_info.name, "tools": sorted(t.name for t in tools.tools),
                              "hits": [h["id"] for h in found.structured_content["hits"]],
                              "uid": os.getuid()}))

anyio.run(main)
'''


def test_recall_arm_ingests_and_serves_mcp(engine, images, run_id, no_leftovers):
    arm = ensure_arm_image(engine, RECALL, images.sandbox, log=lambda m: None)
    files = {f"corpus/docs/{sid}.jsonl": "".join(
        json.dumps({"session": sid, "ts": ts, "role": role, "content": text}) + "\n"
        for role, text in (("user", ask), ("assistant", decision))).encode()
        for sid, (ts, ask, decision) in SESSIONS.items()}
    files["client.py"] = CLIENT.encode()
    script = ("recall-ingest --corpus /tmp/corpus --store /tmp/store --namespace tiny "
              "&& exec /usr/bin/python3 -S /tmp/client.py")
    status, out, err = run_in(engine, arm.tag, run_id, ["/bin/sh", "-c", script], files)
    assert status == 0, err
    ingest_line, reply = out.strip().splitlines()
    assert ingest_line.startswith("recall.ingest: 3 sessions into /tmp/store (namespace tiny")
    got = json.loads(reply)
    assert got["server"] == "recall" and got["uid"] == AGENT_UID
    assert {"search", "get", "recent"} <= set(got["tools"])
    assert got["hits"][0] == "s-rounding"


def test_tags_stable_and_cached(engine, images):
    logs = []
    t0 = time.monotonic()
    again = ensure_images(engine, log=logs.append)
    arm = ensure_arm_image(engine, RECALL, again.sandbox, log=logs.append)
    arm_again = ensure_arm_image(engine, RECALL, again.sandbox, log=logs.append)
    elapsed = time.monotonic() - t0
    assert again == images and arm == arm_again
    assert logs == []  # nothing resolved, nothing built
    assert existing_images(engine) == images
    assert existing_arm_image(engine, RECALL, images.sandbox) == arm
    assert arm.tag.startswith("memgrid-arm-recall:") and engine.images.get(arm.tag).id == arm.id
    assert elapsed < 10, f"cached image calls took {elapsed:.1f} s (hashing the contexts should be well under that)"


# ---- product pins: hashes, npm locks, files out of wheels (parsers only: no registry is contacted) ----------

def test_hash_pins_are_read_and_must_cover_every_line(tmp_path):
    from runner.env.images import read_pins

    good = tmp_path / "requirements.txt"
    good.write_text("# a lock\nfoo==1.0 --hash=sha256:" + "a" * 64 + "\nbar_baz==2.0.1 --hash=sha256:" + "b" * 64
                    + " --hash=sha256:" + "c" * 64 + "\n")
    assert read_pins(good) == {"foo": "1.0", "bar-baz": "2.0.1"}
    mixed = tmp_path / "mixed.txt"
    mixed.write_text("foo==1.0 --hash=sha256:" + "a" * 64 + "\nbar==2.0\n")
    with pytest.raises(EngineError, match=r"mixed.txt:2: has no --hash while other lines do: fix: "):
        read_pins(mixed)
    short = tmp_path / "short.txt"
    short.write_text("foo==1.0 --hash=sha256:abc\n")
    with pytest.raises(EngineError, match=r"short.txt:1: .* is not an exact pin"):
        read_pins(short)


def test_an_npm_lock_without_integrity_is_refused(tmp_path):
    from runner.env.images import read_lock

    lock = tmp_path / "package-lock.json"
    lock.write_text(json.dumps({"lockfileVersion": 3, "packages": {
        "": {"name": "x"}, "node_modules/a": {"version": "1.0.0", "integrity": "sha512-abc"},
        "node_modules/b": {"version": "2.0.0"}}}))
    with pytest.raises(EngineError, match=r"node_modules/b carry no integrity: fix: regenerate the lock"):
        read_lock(lock)
    lock.write_text("{}")
    with pytest.raises(EngineError, match=r"not a package-lock.json"):
        read_lock(lock)
    shipped = read_lock(REPO / "arms" / "server_memory" / "package-lock.json")
    assert shipped["node_modules/@modelcontextprotocol/server-memory"]["version"] == "2026.8.31"


def test_wheel_files_are_validated(tmp_path):
    from runner.env.images import read_wheel_files

    spec = tmp_path / "wheel-files.yaml"
    sha = "d" * 64
    spec.write_text(f"- wheel: foo==1.0\n  sha256: {sha}\n  files: {{foo/model.onnx: onnx/model.onnx}}\n")
    assert read_wheel_files(spec)[0]["files"] == {"foo/model.onnx": "onnx/model.onnx"}
    for body, said in ((f"- wheel: foo\n  sha256: {sha}\n  files: {{a: b}}\n", r"\[0\].wheel: 'foo' is not name==version"),
                       ("- wheel: foo==1.0\n  sha256: nope\n  files: {a: b}\n", r"\[0\].sha256: is not a sha256"),
                       (f"- wheel: foo==1.0\n  sha256: {sha}\n  files: {{a: ../../etc/x}}\n", r"\[0\].files: destination .* leaves assets/"),
                       (f"- wheel: foo==1.0\n  sha256: {sha}\n", r"\[0\]: needs exactly wheel, sha256 and files")):
        spec.write_text(body)
        with pytest.raises(EngineError, match=said):
            read_wheel_files(spec)
    for arm in ("mcp_memory_service", "mempalace", "mcp_server_qdrant"):  # the shipped ones parse
        assert read_wheel_files(REPO / "arms" / arm / "wheel-files.yaml")


def test_a_cli_agents_binary_is_sent_to_the_engine_once_then_copied_from_its_own_image(engine, images):
    """Each CLI agent's layer over an image a cell runs in takes its binary from the agent's own image (built once per
    pin): the layer's build context is its Dockerfile alone, and two layers over different images copy the same
    files (the engine names a COPY's source by its content)."""
    from runner.agents.claude_code import ClaudeCodeAgent
    from runner.env.images import AGENT_LAYER, context_files, find_image

    assert context_files(AGENT_LAYER) == [AGENT_LAYER / "Dockerfile"]
    pin = ClaudeCodeAgent.load_pin()
    over_checker_tag = ClaudeCodeAgent.image_tag(images.checker, pin)
    fresh = find_image(engine, over_checker_tag) is None  # no cell runs in the checker image: a layer of this test's
    try:
        layers = [ClaudeCodeAgent.ensure_image(engine, base, log=lambda m: None) for base in (images.sandbox, images.checker)]
        cli = find_image(engine, ClaudeCodeAgent.cli_image_tag(pin))
        assert cli is not None and cli.labels["memgrid.role"] == "agent-cli"

        def copied(tag: str) -> str:
            """The source of the layer's newest COPY, as the engine names it (by content)."""
            step = next(h["CreatedBy"] for h in engine.api.history(tag) if "COPY" in h["CreatedBy"])
            return step.split("COPY ", 1)[1].split(" in ")[0]

        assert copied(layers[0].tag) == copied(layers[1].tag)
        assert layers[0].id != layers[1].id
    finally:
        if fresh and find_image(engine, over_checker_tag) is not None:
            engine.images.remove(over_checker_tag)
