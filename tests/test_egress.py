"""The model gateway sidecar, for real: its CONNECT allowlist admits the configured host only and
logs every decision; its model route reaches the scripted server and never hands the model a key it
was not given."""

import json
import time

import pytest

from runner.images import ensure_derived
from runner.model_endpoint import PLACEHOLDER_KEY, ModelEndpoint
from runner.sandbox import Limits, hardened, remove_quietly

PORT = 8000
MARKER = "memgrid-egress-marker"
FAKE_KEY = "sk-memgrid-test-not-a-real-key-0123456789"

# Run in the client container: one CONNECT through the gateway; prints status, seconds, and the body
# of a GET sent through the tunnel when it was admitted.
CONNECT = r"""
import json, socket, sys, time
target, path = sys.argv[1], sys.argv[2]
t = time.monotonic()
s = socket.create_connection(("gateway", 3128), timeout=10)
s.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
head = b""
while b"\r\n\r\n" not in head:
    chunk = s.recv(1)
    if not chunk:
        break
    head += chunk
status = int(head.split()[1])
seconds = time.monotonic() - t
body = ""
if status == 200:
    s.sendall(f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    body = data.decode(errors="replace")
print(json.dumps({"status": status, "seconds": seconds, "body": body}))
"""

# Plain HTTP through the proxy, and a Messages request to a gateway's model route.
HTTP = r"""
import json, sys, urllib.request, urllib.error
kind, url = sys.argv[1], sys.argv[2]
if kind == "proxy":
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": "http://gateway:3128"}))
    req = urllib.request.Request(url)
else:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    body = {"model": "scripted", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "Read", "input_schema": {"type": "object"}}, {"name": "mcp__recall__search", "input_schema": {"type": "object"}}]}
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json", "x-api-key": sys.argv[3]})
try:
    with opener.open(req, timeout=10) as r:
        print(json.dumps({"status": r.status, "body": r.read().decode()}))
except urllib.error.HTTPError as e:
    print(json.dumps({"status": e.code, "body": e.read().decode(errors="replace")}))
"""


def run_py(container, code: str, *args) -> dict:
    exit_code, out = container.exec_run(["python3", "-c", code, *args])
    assert exit_code == 0, out.decode(errors="replace")[-2000:]
    return json.loads(out.decode().strip().splitlines()[-1])


def record_of(container, path="/srv/record/gateway.jsonl") -> list[dict]:
    exit_code, out = container.exec_run(["cat", path])
    return [json.loads(line) for line in out.decode().splitlines() if line.strip()] if exit_code == 0 else []


@pytest.fixture
def endpoint(engine, images, run_id, no_leftovers):
    model_image = ensure_derived(engine, "model", images.base, log=lambda m: None)
    ep = ModelEndpoint(engine, model_image.tag, run_id, f"{run_id}-egress", "scripted", script=None,
                       allow_hosts=(f"allowed-target:{PORT}", "bare-name"))
    extra = []  # containers this test adds to the cell's network: removed (by id) before the network

    def add(alias, image, command, role, env=None, user="65534:65534"):
        networking = {ep.network_name: engine.api.create_endpoint_config(aliases=[alias])}
        args = hardened(image, user=user, labels=ep.labels(role), network=ep.network_name,
                        limits=Limits(memory="256m", cpus=0.5, pids=64), command=command, environment=env or {})
        container = engine.containers.create(**args, networking_config=networking)
        extra.append(container)
        container.start()
        return container

    ep.start(attempt=1)
    ep.add = add
    try:
        yield ep
    finally:
        for container in extra:
            remove_quietly(container)
        ep.stop()


def start_target(endpoint, images):
    target = endpoint.add("allowed-target", images.sandbox.tag,
                          ["sh", "-c", f"mkdir -p /tmp/srv && echo {MARKER} > /tmp/srv/marker.txt && "
                                       f"cd /tmp/srv && exec python3 -m http.server {PORT}"], "test-target")
    probe = f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{PORT}/marker.txt', timeout=1)"
    deadline = time.monotonic() + 20
    while target.exec_run(["python3", "-c", probe]).exit_code != 0:
        assert time.monotonic() < deadline, target.logs()[-500:]
        time.sleep(0.1)
    return target


def test_allowlist_admits_only_the_configured_host_and_logs_every_decision(endpoint, images, tmp_path):
    target = start_target(endpoint, images)
    client = endpoint.add("client", images.sandbox.tag, ["sleep", "300"], "test-client")
    target.reload()
    target_ip = target.attrs["NetworkSettings"]["Networks"][endpoint.network_name]["IPAddress"]

    admitted = run_py(client, CONNECT, f"allowed-target:{PORT}", "/marker.txt")
    assert admitted["status"] == 200
    assert "200 OK" in admitted["body"] and MARKER in admitted["body"]  # data flowed through the tunnel

    refused = run_py(client, CONNECT, "other-host:443", "/")
    assert refused["status"] == 403 and refused["seconds"] < 1.0, refused
    # The allowlist names hosts, not addresses: the allowed host's own IP is refused.
    assert run_py(client, CONNECT, f"{target_ip}:{PORT}", "/")["status"] == 403
    # An entry with a port admits that port only; a bare host name admits 443 only.
    assert run_py(client, CONNECT, "allowed-target:22", "/")["status"] == 403
    assert run_py(client, CONNECT, "bare-name:8443", "/")["status"] == 403
    # Plain HTTP never passes, even to an allowed host.
    plain = run_py(client, HTTP, "proxy", f"http://allowed-target:{PORT}/marker.txt")
    assert plain["status"] == 403 and MARKER not in plain["body"]

    records = endpoint.collect(tmp_path)
    assert (tmp_path / "gateway.jsonl").is_file()
    egress = [{k: r.get(k) for k in ("host", "allowed", "why", "error")} for r in records["gateway"] if r["kind"] == "egress"]
    assert egress == [
        {"host": f"allowed-target:{PORT}", "allowed": True, "why": None, "error": None},
        {"host": "other-host:443", "allowed": False, "why": "not in the allowlist", "error": None},
        {"host": f"{target_ip}:{PORT}", "allowed": False, "why": "not in the allowlist", "error": None},
        {"host": "allowed-target:22", "allowed": False, "why": "not in the allowlist", "error": None},
        {"host": "bare-name:8443", "allowed": False, "why": "not in the allowlist", "error": None},
        {"host": f"allowed-target:{PORT}", "allowed": False, "why": "plain HTTP through the proxy", "error": None},
    ]
    assert not [r for r in records["gateway"] if r["kind"] == "model"]


def test_model_route_reaches_the_scripted_server(endpoint, images, tmp_path):
    client = endpoint.add("client", images.sandbox.tag, ["sleep", "300"], "test-client")
    env = endpoint.sandbox_env()
    assert env["ANTHROPIC_API_KEY"] == PLACEHOLDER_KEY and env["HTTPS_PROXY"] == "http://gateway:3128"

    reply = run_py(client, HTTP, "model", env["ANTHROPIC_BASE_URL"] + "/v1/messages", env["ANTHROPIC_API_KEY"])
    assert reply["status"] == 200
    assert json.loads(reply["body"])["content"] == [{"type": "text", "text": "Done."}]

    records = endpoint.collect(tmp_path)
    (call,) = [r for r in records["gateway"] if r["kind"] == "model"]
    assert call["status"] == 200 and call["path"] == "/v1/messages" and call["tools"] == ["Read", "mcp__recall__search"]
    # Scripted mode never gives the gateway a key: the sandbox's placeholder passes through as is.
    assert call["key_injected"] is False
    (seen,) = records["model"]
    assert seen["api_key"] == "placeholder" and seen["tools"] == ["Read", "mcp__recall__search"]


def test_the_model_answers_only_through_the_gateway(endpoint, images, tmp_path):
    """The sandbox shares the cell's network with the scripted model: a request around the gateway
    would escape the record the gate reads, so the model refuses it."""
    client = endpoint.add("client", images.sandbox.tag, ["sleep", "300"], "test-client")
    direct = run_py(client, HTTP, "model", "http://model:8080/v1/messages", PLACEHOLDER_KEY)
    assert direct["status"] == 403
    records = endpoint.collect(tmp_path)
    assert [r["step"] for r in records["model"]] == ["refused"]
    assert not [r for r in records["gateway"] if r["kind"] == "model"]


def test_gateway_swaps_the_placeholder_for_its_key(endpoint, images, tmp_path):
    """Scripted cells never configure a key, so the swap a live cell relies on is exercised here with
    a second gateway (same image, same code) given MEMGRID_API_KEY, in front of the scripted server."""
    keyed = endpoint.add("gateway-keyed", endpoint.image, ["memgrid-gateway"], "test-gateway",
                         env={"MEMGRID_UPSTREAM": "http://model:8080", "MEMGRID_API_KEY": FAKE_KEY,
                              "MEMGRID_GATEWAY_TOKEN": endpoint.gateway_token})
    deadline = time.monotonic() + 20
    while b"ready" not in keyed.logs(stdout=True, stderr=False):
        assert time.monotonic() < deadline, keyed.logs()[-500:]
        time.sleep(0.05)
    client = endpoint.add("client", images.sandbox.tag, ["sleep", "300"], "test-client")

    reply = run_py(client, HTTP, "model", "http://gateway-keyed:8080/v1/messages", PLACEHOLDER_KEY)
    assert reply["status"] == 200

    (call,) = [r for r in record_of(keyed) if r["kind"] == "model"]
    assert call["key_injected"] is True and call["status"] == 200
    records = endpoint.collect(tmp_path)
    (seen,) = records["model"]
    assert seen["api_key"] == "injected"  # the model got a key that is not the sandbox's placeholder
    for text in ((tmp_path / "gateway.jsonl").read_text(), (tmp_path / "model_requests.jsonl").read_text(),
                 json.dumps(record_of(keyed))):
        assert FAKE_KEY not in text  # never a key in any record
