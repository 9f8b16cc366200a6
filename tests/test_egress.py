"""The model gateway sidecar, for real: its CONNECT allowlist admits the configured host only and
logs every decision; its model route reaches the scripted server and never hands the model a key it
was not given; it forwards the two routes the agent needs and refuses every other request before it
reaches the upstream."""

import json
import time

import pytest

from runner.env.images import ensure_derived
from runner.env.model_endpoint import PLACEHOLDER_KEY, ModelEndpoint
from runner.env.containers import Limits, hardened, remove_quietly

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


# Run in the counting upstream: answers every request 200 and first appends its request line (and
# whether the gateway's key came with it) to HITS, so any request that got through is counted.
COUNTER = r"""
import json, socketserver, sys
class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        line = self.rfile.readline(65536).decode("latin-1").rstrip("\r\n")
        headers = {}
        while (raw := self.rfile.readline(65536)) not in (b"\r\n", b"\n", b""):
            name, _, value = raw.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        with open(sys.argv[2], "a") as f:
            f.write(json.dumps({"line": line, "key": headers.get("x-api-key") == sys.argv[1]}) + "\n")
        self.rfile.read(int(headers.get("content-length") or 0))
        body = b'{"type": "message", "content": []}'
        self.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
                         b"content-length: %d\r\n\r\n%s" % (len(body), body))
socketserver.ThreadingTCPServer.allow_reuse_address = True
server = socketserver.ThreadingTCPServer(("0.0.0.0", 8000), Handler)
print("ready", flush=True)
server.serve_forever()
"""
HITS = "/tmp/hits.jsonl"

# Run in the client container: each argument is one raw HTTP request sent as is to the gateway on
# its own connection; prints the status of each reply (None: no reply within the timeout, as when the
# gateway waits for a body it should have refused).
RAW = r"""
import json, socket, sys
out = []
for request in sys.argv[1:]:
    data = b""
    try:
        with socket.create_connection(("gateway-keyed", 8080), timeout=5) as s:
            s.sendall(request.encode("latin-1"))
            while chunk := s.recv(65536):
                data += chunk
    except OSError:  # a reset after the reply, or a timeout: judge by what arrived
        pass
    if data.startswith(b"HTTP/"):
        status = int(data.split()[1])
    else:  # an HTTP/0.9 reply has no status line: the gateway's refusal is told by its body
        status = "refused" if b"the model gateway refuses" in data else data[:60].decode("latin-1") or None
    out.append(status)
print(json.dumps(out))
"""
PROBE_HEADER = "memgrid-probe-header-value"  # sent on every request: must appear in no record


def raw(method: str, target: str, *, body: bytes = b'{"messages": []}', length: str | None = "auto",
        extra: str = "") -> str:
    """One HTTP/1.1 request as text; `length` None sends no Content-Length, "auto" the body's."""
    head = (f"{method} {target} HTTP/1.1\r\nHost: gateway-keyed:8080\r\nx-api-key: {PLACEHOLDER_KEY}\r\n"
            f"x-probe: {PROBE_HEADER}\r\ncontent-type: application/json\r\n{extra}")
    if length is not None:
        head += f"content-length: {len(body) if length == 'auto' else length}\r\n"
    return head + "\r\n" + body.decode()


def run_py(container, code: str, *args) -> dict | list:
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
                       allow_hosts=(f"allowed-target:{PORT}", "bare-name"), guard_image=images.base.tag)
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


# Run in the client container: sends each argument (a Messages request body, JSON) to the gateway's route
# named before it (/v1/messages or /v1/messages/count_tokens); prints the statuses.
HISTORY = r"""
import json, sys, urllib.request
out = []
for route, body in zip(sys.argv[1::2], sys.argv[2::2]):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    req = urllib.request.Request("http://gateway:8080" + route, data=body.encode(), method="POST",
                                 headers={"content-type": "application/json", "x-api-key": "placeholder"})
    with opener.open(req, timeout=10) as r:
        out.append(r.status)
print(json.dumps(out))
"""


def history(*calls) -> str:
    """A Messages request whose history holds each (id, tool, result text) as a call and its result."""
    messages = [{"role": "user", "content": "go"}]
    for call, tool, text in calls:
        messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": call, "name": tool, "input": {}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
                                                   "content": [{"type": "text", "text": text}]}]}]
    return json.dumps({"model": "scripted", "max_tokens": 16, "messages": messages,
                       "tools": [{"name": "Bash", "input_schema": {"type": "object"}}]})


def test_gateway_records_which_tool_delivered_each_result_once(endpoint, images, tmp_path):
    """The record outside the sandbox of what reached the model: each tool result under the name of the
    call that produced it, once, though every request resends the whole history; count_tokens delivers
    nothing to the model and claims no result."""
    client = endpoint.add("client", images.sandbox.tag, ["sleep", "300"], "test-client")
    shell = ("toolu_a", "Bash", "cat /sandbox/store: mem-0123456789ab")
    memory = ("toolu_b", "mcp__recall__search", '{"hits": [{"id": "mem-0123456789ab"}]}')
    statuses = run_py(client, HISTORY, "/v1/messages/count_tokens", history(shell), "/v1/messages", history(shell),
                      "/v1/messages", history(shell, memory))
    assert statuses == [200, 200, 200]
    calls = [r for r in endpoint.collect(tmp_path)["gateway"] if r["kind"] == "model"]
    assert [c["path"] for c in calls] == ["/v1/messages/count_tokens", "/v1/messages", "/v1/messages"]
    assert "tool_results" not in calls[0]
    assert [(r["call"], r["tool"], r["text"]) for r in calls[1]["tool_results"]] == [shell]
    assert [(r["call"], r["tool"], r["text"]) for r in calls[2]["tool_results"]] == [memory]


def test_the_model_answers_only_through_the_gateway(endpoint, images, tmp_path):
    """The sandbox shares the cell's network with the scripted model: a request around the gateway
    would escape the record the gate reads, so the model refuses it."""
    client = endpoint.add("client", images.sandbox.tag, ["sleep", "300"], "test-client")
    direct = run_py(client, HTTP, "model", "http://model:8080/v1/messages", PLACEHOLDER_KEY)
    assert direct["status"] == 403
    records = endpoint.collect(tmp_path)
    assert [r["step"] for r in records["model"]] == ["refused"]
    assert not [r for r in records["gateway"] if r["kind"] == "model"]


def wait_ready(container) -> None:
    deadline = time.monotonic() + 20
    while b"ready" not in container.logs(stdout=True, stderr=False):
        assert time.monotonic() < deadline, container.logs()[-500:]
        time.sleep(0.05)


def start_keyed_gateway(endpoint, upstream: str):
    """A second gateway (same image, same code) given MEMGRID_API_KEY, as a live cell's is."""
    keyed = endpoint.add("gateway-keyed", endpoint.image, ["memgrid-gateway"], "test-gateway",
                         env={"MEMGRID_UPSTREAM": upstream, "MEMGRID_API_KEY": FAKE_KEY,
                              "MEMGRID_GATEWAY_TOKEN": endpoint.gateway_token})
    wait_ready(keyed)
    return keyed


def test_gateway_swaps_the_placeholder_for_its_key(endpoint, images, tmp_path):
    """Scripted cells never configure a key, so the swap a live cell relies on is exercised here with
    a keyed gateway in front of the scripted server."""
    keyed = start_keyed_gateway(endpoint, "http://model:8080")
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


REFUSED = [  # (request, status): none of these may reach the upstream
    *[(raw("GET", path, body=b"", length=None), 403)
      for path in ("/v1/models", "/v1/files", "/v1/organizations/me", "/admin", "/v1/messages/batches")],
    *[(raw("POST", path), 403) for path in (
        "/v1/messages/batches", "/v1/messages/batches?beta=true", "/v1/files", "/v1/messages/../models",
        "/v1/messages/%2e%2e/models", "/v1/messages/%2E%2E/files", "/v1/%6dessages", "//v1/messages",
        "/v1//messages", "/v1/messages/", "/v1/messages/count_tokens/", "/V1/messages",
        "/v1/messages?a=/../../models", "http://x/v1/models", "http://gateway-keyed:8080/v1/messages", "*")],
    *[(raw(method, "/v1/messages?beta=true"), 403) for method in ("PUT", "DELETE", "PATCH", "OPTIONS", "HEAD",
                                                                  "GET", "TRACE", "post")],
    (raw("GET", "/v1/messages/count_tokens?beta=true", body=b"", length=None), 403),
    (raw("CONNECT", "api.anthropic.com:443", body=b"", length=None), 403),
    ("GET /v1/models\r\n\r\n", "refused"),  # HTTP/0.9: no version, no status line
    # The allowed route with a body the gateway must not take in: never read, never forwarded.
    (raw("POST", "/v1/messages", length=str(100 * 1024**3)), 413),
    (raw("POST", "/v1/messages", length=str(32 * 1024**2 + 1)), 413),
    (raw("POST", "/v1/messages", length="abc"), 400),
    (raw("POST", "/v1/messages", length="-5"), 400),
    (raw("POST", "/v1/messages", length=None, extra="content-length: 16\r\ncontent-length: 99\r\n"), 400),
    (raw("POST", "/v1/messages", length=None), 411),
    (raw("POST", "/v1/messages", body=b"10\r\n" + b'{"messages": []}' + b"\r\n0\r\n\r\n", length=None,
         extra="transfer-encoding: chunked\r\n"), 411),
]
ALLOWED = ["/v1/messages?beta=true", "/v1/messages/count_tokens?beta=true", "/v1/messages"]


def test_gateway_forwards_only_the_agents_routes(endpoint, images, tmp_path):
    """The gateway puts the real key on what it forwards, so everything but the two routes the CLI
    calls (POST /v1/messages?beta=true and .../count_tokens?beta=true) is refused and recorded before
    it reaches the upstream, which counts every request it receives; the allowed routes, sent after
    the refusals, prove the gateway survived them."""
    counter = endpoint.add("counter", images.sandbox.tag, ["python3", "-c", COUNTER, FAKE_KEY, HITS], "test-upstream")
    wait_ready(counter)
    keyed = start_keyed_gateway(endpoint, "http://counter:8000")
    client = endpoint.add("client", images.sandbox.tag, ["sleep", "300"], "test-client")

    requests = [*REFUSED, *[(raw("POST", target), 200) for target in ALLOWED]]
    statuses = run_py(client, RAW, *[request for request, _ in requests])
    lines = [request.split("\r\n")[0] for request, _ in requests]
    assert list(zip(lines, statuses)) == [(line, status) for line, (_, status) in zip(lines, requests)]

    exit_code, out = counter.exec_run(["cat", HITS])
    hits = [json.loads(line) for line in out.decode().splitlines()] if exit_code == 0 else []
    # Only the allowed routes reached the upstream, as sent, each with the gateway's key.
    assert hits == [{"line": f"POST {target} HTTP/1.1", "key": True} for target in ALLOWED]

    record = record_of(keyed)
    refused = [(r["method"], r["target"], r["status"]) for r in record if r["kind"] == "refused"]
    expected = [(line.split()[0], line.split()[1], 403 if status == "refused" else status)
                for line, (_, status) in zip(lines, REFUSED)]
    assert refused == expected
    assert [(r["path"], r["status"], r["key_injected"]) for r in record if r["kind"] == "model"] == [
        ("/v1/messages", 200, True), ("/v1/messages/count_tokens", 200, True), ("/v1/messages", 200, True)]
    text = json.dumps(record)
    assert PROBE_HEADER not in text and FAKE_KEY not in text and PLACEHOLDER_KEY not in text  # never a header value
    keyed.reload()
    assert keyed.status == "running"


CHAT = r"""
import json, sys, urllib.request, urllib.error
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
body = {"model": "scripted", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
out = []
for path in sys.argv[2:]:
    req = urllib.request.Request(sys.argv[1] + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json", "authorization": "Bearer sk-memgrid-placeholder"})
    try:
        with opener.open(req, timeout=20) as r:
            out.append({"status": r.status, "body": json.load(r)})
    except urllib.error.HTTPError as e:
        out.append({"status": e.code})
print(json.dumps(out))
"""


def test_a_chat_gateway_forwards_chat_completions_alone_with_its_key_and_records_their_usage(endpoint, images):
    """The personal protocol's model answerer's gateway (MEMGRID_API=chat): chat completions reach the model with the
    key as a bearer token and their usage is recorded under the ledger's names; the other APIs' routes are refused."""
    chat = endpoint.add("gateway-chat", endpoint.image, ["memgrid-gateway"], "test-gateway",
                        env={"MEMGRID_UPSTREAM": "http://model:8080", "MEMGRID_API_KEY": FAKE_KEY, "MEMGRID_API": "chat",
                             "MEMGRID_GATEWAY_TOKEN": endpoint.gateway_token})
    wait_ready(chat)
    client = endpoint.add("client", images.sandbox.tag, ["sleep", "300"], "test-client")
    answered, messages, responses = run_py(client, CHAT, "http://gateway-chat:8080", "/v1/chat/completions",
                                           "/v1/messages", "/v1/responses")
    assert answered["status"] == 200 and answered["body"]["choices"][0]["message"]["role"] == "assistant"
    assert (messages["status"], responses["status"]) == (403, 403)
    (call,) = [r for r in record_of(chat) if r["kind"] == "model"]
    assert call["key_injected"] is True and call["path"] == "/v1/chat/completions"
    usage = answered["body"]["usage"]
    assert call["usage"] == {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"]}
