"""The shared embedder sidecar (images/embedder, runner/env/embedder.py; issue #13, fairness of embeddings).

It computes what the product's own in-process embedder computes from the same weights; a product pointed at it
(mcp_memory_service_shared) writes and searches its store through it and nowhere else; it is reachable only from
the container whose network namespace it shares, and goes with that container; one that cannot get ready fails
the ingest and discards the cell by name.
"""

import json
import re
from dataclasses import replace

import pytest

from conftest import REPO
from runner.arms.ingest import ingest
from runner.env import embedder
from runner.env.images import ensure_arm_image, ensure_derived
from runner.env.containers import CELL_LABEL, ROLE_LABEL, RUN_LABEL, Limits, hardened, remove_quietly
from runner.env.sandbox import Sandbox
from runner.errors import UserError
from runner.grading import gate
from runner.plan.spec import load_arm
from test_products import PLANTED, corpus, search  # noqa: F401  (corpus is a fixture)

pytestmark = pytest.mark.docker

TEXTS = ["Rotate the ledger signing key with keyctl rotate --grace 48h.", "hello",
         "The orders migration locks the table; add the column nullable and backfill it in batches."]

# Run in mcp_memory_service's image, in the sidecar's network namespace: the product's own ONNX embedder over the
# weights its image carries, and the sidecar's answer for the same texts.
COMPARE = r'''
import json, sys, urllib.request
sys.path[:0] = ["/opt/mcp-memory-service/pydeps"]
from mcp_memory_service.embeddings.onnx_embeddings import ONNXEmbeddingModel
texts, url = json.loads(sys.argv[1])
own = ONNXEmbeddingModel("all-MiniLM-L6-v2").encode(texts).tolist()
req = urllib.request.Request(url, json.dumps({"input": texts, "model": "all-MiniLM-L6-v2"}).encode(),
                             {"Content-Type": "application/json"})
shared = json.load(urllib.request.urlopen(req, timeout=60))
print(json.dumps({"own": own, "shared": shared}))
'''


@pytest.fixture(scope="module")
def embedder_image(engine, images):
    return ensure_derived(engine, "embedder", images.base, log=lambda m: None).tag


@pytest.fixture(scope="module")
def product_image(engine, images):
    return ensure_arm_image(engine, REPO / "arms" / "mcp_memory_service", images.sandbox, log=lambda m: None).tag


def in_namespace(engine, image, sidecar, run_id, command, user="1000:1000"):
    """Run `command` in a container of `image` that shares the sidecar's network namespace: (exit code, output)."""
    args = hardened(image, user=user, network=f"container:{sidecar.container.id}", limits=Limits(memory="1g"),
                    labels={RUN_LABEL: run_id, CELL_LABEL: "probe"}, command=command,
                    environment={"HOME": "/opt/mcp-memory-service/home", "MCP_MEMORY_ONNX_ALLOW_DOWNLOAD": "0"})
    container = engine.containers.create(**args)
    try:
        container.start()
        code = container.wait(timeout=300)["StatusCode"]
        return code, container.logs(stdout=True, stderr=True).decode(errors="replace")
    finally:
        remove_quietly(container)


def test_sidecar_vectors_equal_the_products_in_process_onnx(engine, embedder_image, product_image, run_id, no_leftovers):
    sidecar = embedder.start(engine, embedder_image, run_id=run_id, cell_id="compare", network="none", lifetime=600)
    try:
        code, out = in_namespace(engine, product_image, sidecar, run_id,
                                 ["python3", "-IS", "-c", COMPARE, json.dumps([TEXTS, embedder.EMBEDDER_URL])])
        assert code == 0, out[-800:]
        got = json.loads(out.strip().splitlines()[-1])
        records = sidecar.records()
    finally:
        sidecar.stop()
    shared = got["shared"]
    assert [d["index"] for d in shared["data"]] == [0, 1, 2] and shared["model"] == "all-MiniLM-L6-v2"
    assert shared["usage"]["prompt_tokens"] > len(TEXTS)
    for own, item in zip(got["own"], shared["data"]):
        vector = item["embedding"]
        assert len(vector) == 384
        assert abs(sum(x * x for x in vector) - 1) < 1e-5
        assert max(abs(a - b) for a, b in zip(own, vector)) < 1e-5
    ready = next(r for r in records if r["event"] == "ready")
    assert re.fullmatch(r"[0-9a-f]{64}", ready["model_sha256"]) and ready["dimensions"] == 384
    assert [r["inputs"] for r in records if r["event"] == "request"] == [3]


def test_ingest_through_the_shared_embedder_and_search_through_the_product(engine, embedder_image, product_image,
                                                                            corpus, run_id, no_leftovers):  # noqa: F811
    arm = load_arm(REPO / "arms" / "mcp_memory_service_shared")
    folder, names = corpus
    snapshot = ingest(engine, product_image, arm, folder, "present", 0, run_id=run_id, embedder=embedder_image)
    assert snapshot.report["documents"] == len(names)
    used = snapshot.report["embedder"]
    # The product asked the sidecar for an embedding of every session it stored (and its start-up probe).
    assert used["kind"] == "shared" and used["inputs"] >= len(names) and used["refused"] == 0
    assert re.fullmatch(r"[0-9a-f]{64}", used["model_sha256"])
    sidecar = embedder.start(engine, embedder_image, run_id=run_id, cell_id="search", network="none", lifetime=600)
    try:
        found = search(engine, product_image, arm, snapshot, run_id,
                       "how should we change the credentials used to sign the books",
                       network=f"container:{sidecar.container.id}")
        usage = sidecar.usage()
    finally:
        sidecar.stop()
    assert not found["is_error"], found["text"][:300]
    ids = [m.group("id") for m in re.finditer(arm.mcp.search.hit_pattern, found["text"])]
    assert ids[0] == PLANTED, found["text"][:600]
    assert usage["requests"] >= 2  # the product's start-up probe, then the query itself


def test_a_product_without_its_sidecar_fails_rather_than_embedding_itself(engine, product_image, run_id,
                                                                          corpus, no_leftovers):  # noqa: F811
    """The shared arm's ingest command with no sidecar in its namespace: the product refuses to start; it never falls
    back to its own ONNX model, which its image carries."""
    arm = replace(load_arm(REPO / "arms" / "mcp_memory_service_shared"), embedder=None)  # the harness starts no sidecar
    folder, _ = corpus
    with pytest.raises(UserError, match=r"ingest: exited \d+ .*unreachable"):
        ingest(engine, product_image, arm, folder, "present", 0, run_id=run_id)


def test_sidecar_is_reachable_only_in_its_namespace_and_goes_with_the_sandbox(engine, images, embedder_image, run_id,
                                                                             no_leftovers):
    """A sandbox on a network of its own (as a claude-code cell's): a container on that network, and this host at
    its own addresses, cannot reach the sidecar; the sandbox itself can; removing the sandbox removes it."""
    network = engine.networks.create(f"memgrid-test-{run_id}", driver="bridge", internal=True,
                                     labels={RUN_LABEL: run_id})
    probe = ("import socket, sys\nfor host in sys.argv[1:]:\n    s = socket.socket(); s.settimeout(2)\n"
             "    print(host, s.connect_ex((host, %d)))\n" % embedder.PORT)
    # From the host's namespace an address is probed only while it is still this host's: another test's network
    # removed since the listing leaves an outside address, which this machine's egress proxy accepts (connect 0).
    host_probe = ("import socket, sys\nfor host in sys.argv[1:]:\n    s = socket.socket(); s.settimeout(2)\n"
                  "    try:\n        s.bind((host, 0))\n    except OSError:\n        print(host, 'gone'); continue\n"
                  "    print(host, s.connect_ex((host, %d)))\n" % embedder.PORT)
    sandbox = Sandbox(engine, images.sandbox.tag, run_id, "reach", bundle_tar=_empty_tar(), lifetime=300,
                      network=network.name, embedder=embedder_image)
    try:
        sandbox.start()
        assert sandbox.embedder_failure is None and sandbox.embedder is not None
        inside = sandbox.exec(["python3", "-c", probe, "127.0.0.1"], timeout=30, workdir="/")
        assert inside.stdout.split() == ["127.0.0.1", "0"]
        sandbox.container.reload()
        address = sandbox.container.attrs["NetworkSettings"]["Networks"][network.name]["IPAddress"]
        neighbour = engine.containers.run(images.sandbox.tag, ["python3", "-c", probe, address], network=network.name,
                                          labels={RUN_LABEL: run_id, CELL_LABEL: "neighbour"}, detach=True)
        try:
            assert neighbour.wait(timeout=60)["StatusCode"] == 0
            said = neighbour.logs().decode().split()
        finally:
            remove_quietly(neighbour)
        assert said[0] == address and said[1] != "0"  # refused: it listens on the namespace's loopback only
        network.reload()
        gateway = network.attrs["IPAM"]["Config"][0]["Gateway"]  # this sandbox's side of the host
        hosts = _host_addresses()
        assert gateway in hosts, (gateway, hosts)
        host_side = engine.containers.run(images.sandbox.tag, ["python3", "-c", host_probe, *hosts], network_mode="host",
                                          labels={RUN_LABEL: run_id, CELL_LABEL: "host"}, detach=True)
        try:
            assert host_side.wait(timeout=60)["StatusCode"] == 0
            lines = host_side.logs().decode().splitlines()
        finally:
            remove_quietly(host_side)
        said = dict(line.split() for line in lines)
        assert said.keys() == set(hosts) and all(v != "0" for v in said.values()), lines
        assert said[gateway] != "gone" and said["127.0.0.1"] != "gone", lines  # the ones that matter were probed
        sidecar_id = sandbox.embedder.container.id
    finally:
        sandbox.stop()
        network.remove()
    assert not engine.api.containers(all=True, filters={"id": sidecar_id})
    assert not engine.api.containers(all=True, filters={"label": [f"{RUN_LABEL}={run_id}", f"{ROLE_LABEL}=embedder"]})


def test_a_sidecar_that_does_not_get_ready_fails_the_ingest_and_discards_the_cell_by_name(engine, images, product_image,
                                                                                         corpus, run_id, no_leftovers):  # noqa: F811
    """An image without memgrid-embedder stands in for a broken sidecar."""
    arm = load_arm(REPO / "arms" / "mcp_memory_service_shared")
    folder, _ = corpus
    with pytest.raises(UserError, match=r"arms/mcp_memory_service_shared/arm.yaml: embedder: shared: the shared embedder "
                                        r"sidecar exited: .*memgrid-embedder.*: fix: "):
        ingest(engine, product_image, arm, folder, "present", 0, run_id=run_id, embedder=images.sandbox.tag)
    sandbox = Sandbox(engine, product_image, run_id, "broken", bundle_tar=_empty_tar(), lifetime=120,
                      embedder=images.sandbox.tag)
    try:
        sandbox.start()
        proof = gate.embedder_proof(sandbox.embedder, sandbox.embedder_failure)
    finally:
        sandbox.stop()
    decision = gate.decide([proof])
    assert not decision.admitted and decision.discard_reason == gate.EMBEDDER_NOT_READY
    assert proof.detail.startswith("the shared embedder sidecar exited")


def _empty_tar() -> bytes:
    from runner.env.archive import pack

    return pack([])


def _host_addresses() -> list[str]:
    """This machine's own IPv4 addresses (the bridges' included), never an outside one."""
    import subprocess

    out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=10).stdout.split()
    return [a for a in out if re.fullmatch(r"\d+\.\d+\.\d+\.\d+", a)] + ["127.0.0.1"]


def test_unknown_model_names_are_refused(engine, embedder_image, product_image, run_id, no_leftovers):
    """A product configured for another model gets an error, not MiniLM under another name."""
    sidecar = embedder.start(engine, embedder_image, run_id=run_id, cell_id="model", network="none", lifetime=600)
    ask = ("import json, urllib.request, urllib.error\n"
           "req = urllib.request.Request('%s', json.dumps({'input': 'x', 'model': 'nomic-embed-text'}).encode())\n"
           "try:\n    urllib.request.urlopen(req, timeout=30)\nexcept urllib.error.HTTPError as e:\n    print(e.code)\n"
           % embedder.EMBEDDER_URL)
    try:
        code, out = in_namespace(engine, product_image, sidecar, run_id, ["python3", "-c", ask])
    finally:
        sidecar.stop()
    assert code == 0 and out.strip() == "404", out

