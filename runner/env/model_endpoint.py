"""A model agent's cell's way to its model: an internal network of its own and two sidecars.

    sandbox --(internal network)--> gateway --> scripted model server   (model 'scripted': no egress at all)
                                            \\-> the model provider       (a live model: the gateway alone
                                                                          also joins a bridge network)

The gateway (images/model/memgrid-gateway) holds the API key, so the sandbox gets only a
placeholder and never the key; it admits only the routes of the agent's model API (APIS) to the model upstream, plus, under the `allowlist`
policy, HTTPS tunnels to the grid's allow_hosts. Both sidecars keep records (every request, the
tools each offered the model, every egress decision) that are copied into the cell folder.
"""

import io
import json
import os
import secrets
import tarfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import docker.errors

from runner.env import netguard
from runner.grading.gate import GateProof
from runner.env.containers import CELL_LABEL, RUN_LABEL, ROLE_LABEL, Limits, hardened, remove_quietly
from runner.env.sandbox import remove_network

SCRIPTED = "scripted"
# The offline scripted models, each playing the cell's script with its own traits (merged into the script): `scripted`
# uses all that memory returned; `scripted-skim` only the first thing memory returned (the first search result, file or
# record; it fetches no hit), as a weaker model might. Two that differ let a zero-spend grid show a model axis with two
# outcomes, not the same model twice.
SCRIPTED_MODELS = {SCRIPTED: {}, "scripted-skim": {"reads": 1}}
PLACEHOLDER_KEY = "sk-memgrid-placeholder"  # what the sandbox holds; the gateway swaps in the real key
# The model APIs the agents speak: where a live model is, which variable holds its key, and what the sandbox is
# told (the CLI's own variables; codex reads its base URL from its config, which names OPENAI_API_KEY).
APIS = {
    "anthropic": {"upstream": "https://api.anthropic.com", "key_env": "ANTHROPIC_API_KEY",
                  "sandbox_env": {"ANTHROPIC_BASE_URL": "http://gateway:8080", "ANTHROPIC_API_KEY": PLACEHOLDER_KEY}},
    "openai": {"upstream": "https://api.openai.com", "key_env": "OPENAI_API_KEY",
               "sandbox_env": {"OPENAI_API_KEY": PLACEHOLDER_KEY}},
    # OpenAI-compatible chat completions (the personal protocol's answerer, as Memora's code asks its answer model)
    "chat": {"upstream": "https://api.openai.com", "key_env": "OPENAI_API_KEY",
             "sandbox_env": {"OPENAI_BASE_URL": "http://gateway:8080/v1", "OPENAI_API_KEY": PLACEHOLDER_KEY}},
}
READY_SECONDS = 30
NETWORK_REMOVAL_SECONDS = 30  # the engine can list a just-removed member's endpoint for a moment
SIDECAR_LIMITS = Limits(memory="256m", cpus=0.5, pids=64)


def is_scripted(model: str | None) -> bool:
    """Whether the model is one of the offline scripted models (no key, no spend)."""
    return model in SCRIPTED_MODELS


# Where each family of live model ids is served. A model of one family is never served at the other provider's
# API, so an agent speaking that API is refused the model before the engine. An id of neither family (an open
# model, a router's id) may be served by a compatible MEMGRID_MODEL_UPSTREAM and is left to the run.
FAMILIES = {"https://api.anthropic.com": ("claude-",), "https://api.openai.com": ("gpt-", "chatgpt-", "o1", "o3", "o4-")}


def unservable(model: str, api: str) -> str | None:
    """Why an agent speaking `api` cannot reach this model at its provider's API; None when it can or may."""
    if is_scripted(model) or os.environ.get("MEMGRID_MODEL_UPSTREAM"):
        return None
    upstream = APIS[api]["upstream"]
    return next((f"{model} is served at {where}, and this agent's API ({api}) goes to {upstream}"
                 for where, prefixes in FAMILIES.items() if where != upstream and model.startswith(prefixes)), None)


def live_upstream(api: str) -> str:
    """Where a live model is reached: MEMGRID_MODEL_UPSTREAM, else the provider's API."""
    return os.environ.get("MEMGRID_MODEL_UPSTREAM", APIS[api]["upstream"])


def live_api_key(api: str) -> str | None:
    return os.environ.get(APIS[api]["key_env"]) or None


@dataclass
class ModelEndpoint:
    client: object
    image: str  # the model image (gateway + scripted server)
    run_id: str
    cell_id: str
    model: str
    script: dict | None = None  # the scripted model's script; None for a live model
    allow_hosts: tuple[str, ...] = ()
    max_output_tokens: int | None = None  # the session's output cap, enforced by the gateway; None: none
    guard_image: str = ""  # the image the network guard runs from (it needs iproute2: the base image)
    api: str = "anthropic"  # the model API the agent speaks (APIS): the gateway forwards its routes only
    network_name: str = ""
    guard_proof: GateProof | None = None  # the scripted model container's route table
    containers: dict = field(default_factory=dict)
    network: object = None
    gateway_token: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _stopped: bool = False

    @staticmethod
    def key_env(api: str) -> str:
        return APIS[api]["key_env"]

    @property
    def scripted(self) -> bool:
        return is_scripted(self.model)

    def labels(self, role: str) -> dict:
        return {RUN_LABEL: self.run_id, CELL_LABEL: self.cell_id, ROLE_LABEL: role}

    def start(self, attempt: int) -> None:
        """The network and both sidecars, ready; on a failure, nothing of them is left."""
        self.open_network(attempt)
        try:
            self.start_sidecars()
        except BaseException:
            self.stop()
            raise

    def open_network(self, attempt: int) -> None:
        # Unique per start: a cell id is a hash of its inputs, so two runs of one grid on one engine
        # (a reproduce beside the original, two test sessions) would otherwise share a network name.
        self.network_name = f"memgrid-{self.cell_id}-{attempt}-{secrets.token_hex(4)}"
        self.network = self.client.networks.create(self.network_name, driver="bridge", internal=True,
                                                   labels=self.labels("network"))

    def start_sidecars(self) -> None:
        """The sidecars on the open network, guarded and ready. A cell runs this on a thread of its own while
        its sandbox starts on the same network (trial.run_phase), so it never removes the network; `stop`
        may be called at any time, also while this is under way."""
        upstream = "http://model:8080" if self.scripted else live_upstream(self.api)
        self.gateway_token = token = secrets.token_hex(16)  # the model server answers only the gateway
        env = {"MEMGRID_UPSTREAM": upstream, "MEMGRID_ALLOW_HOSTS": ",".join(self.allow_hosts),
               "MEMGRID_GATEWAY_TOKEN": token, "MEMGRID_MAX_OUTPUT_TOKENS": str(self.max_output_tokens or ""),
               "MEMGRID_API": self.api}
        key = None if self.scripted else live_api_key(self.api)
        if key:
            env["MEMGRID_API_KEY"] = key
        if self.scripted:
            model = self._create("model", ["memgrid-model-server", "8080"], {"MEMGRID_GATEWAY_TOKEN": token})
            self._put_script(model)
        # The scripted gateway resolves one name, the model sidecar's, which the engine's own DNS answers at once;
        # with the sidecar gone (it died) that DNS has nowhere to ask and the resolver's default waits 10 s (5 s
        # twice) before each request's 502, so a cell whose model died took 30 s to be discarded as unreachable.
        dns = {"dns_opt": ["timeout:1", "attempts:2"]} if self.scripted else {}
        gateway = self._create("gateway", ["memgrid-gateway"], env, **dns)
        if not self.scripted:  # the only container with a way out
            self.client.networks.get("bridge").connect(gateway)
        with ThreadPoolExecutor(max_workers=2) as pool:  # independent starts: side by side
            for started in [pool.submit(c.start) for c in self._registered()]:
                started.result()
        if self.scripted:  # what the session sends can steer the model server: keep the host out of its reach too
            self.guard_proof = netguard.guard(self.client, model, self.guard_image,
                                              run_id=self.run_id, cell_id=self.cell_id, name="model_host_unreachable")
        self._wait_ready()

    def _create(self, alias: str, command: list[str], env: dict, **create):
        networking = {self.network_name: self.client.api.create_endpoint_config(aliases=[alias])}
        args = hardened(self.image, user="65534:65534", labels=self.labels(alias), network=self.network_name,
                        limits=SIDECAR_LIMITS, command=command, environment=env, **create)
        container = self.client.containers.create(**args, networking_config=networking)
        with self._lock:
            stopped = self._stopped
            if not stopped:
                self.containers[alias] = container
        if stopped:  # the cell stopped while this was being created: nothing of it may stay
            remove_quietly(container)
            raise RuntimeError(f"the cell stopped while its {alias} sidecar was being created")
        return container

    def _registered(self) -> list:
        with self._lock:
            return list(self.containers.values())

    def _put_script(self, model) -> None:
        data = json.dumps({**self.script, **SCRIPTED_MODELS[self.model]} if self.script else {}).encode()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            info = tarfile.TarInfo("script.json")
            info.size, info.uid, info.gid, info.mode = len(data), 65534, 65534, 0o444
            tar.addfile(info, io.BytesIO(data))
        if self.script is not None and not model.put_archive("/srv/script", buf.getvalue()):
            raise RuntimeError("placing the model script was refused")

    def _wait_ready(self) -> None:
        """Both servers print 'ready' once listening; bounded polling of their logs."""
        deadline = time.monotonic() + READY_SECONDS
        for name, container in list(self.containers.items()):
            while b"ready" not in container.logs(stdout=True, stderr=False):
                container.reload()
                if container.status == "exited" or time.monotonic() > deadline:
                    tail = container.logs(stdout=True, stderr=True)[-300:].decode(errors="replace")
                    raise RuntimeError(f"the {name} sidecar did not become ready: {tail!r}")
                time.sleep(0.02)

    def sandbox_env(self) -> dict:
        env = {**APIS[self.api]["sandbox_env"],
               "NO_PROXY": "gateway,model,localhost,127.0.0.1", "no_proxy": "gateway,model,localhost,127.0.0.1"}
        if self.allow_hosts:
            env.update({"HTTPS_PROXY": "http://gateway:3128", "https_proxy": "http://gateway:3128"})
        return env

    def collect(self, cell_dir: Path) -> dict[str, list[dict]]:
        """Copy the sidecars' records into the cell folder; returns them parsed."""
        wanted = [(name, filename, target) for name, filename, target in
                  (("gateway", "gateway.jsonl", "gateway.jsonl"), ("model", "requests.jsonl", "model_requests.jsonl"))
                  if name in self.containers]
        with ThreadPoolExecutor(max_workers=2) as pool:  # one engine round trip each: side by side
            texts = list(pool.map(lambda w: self._record(self.containers[w[0]], w[1]), wanted))
        records = {}
        for (name, _, target), text in zip(wanted, texts):
            (cell_dir / target).write_text(text)
            records[name] = [json.loads(line) for line in text.splitlines() if line.strip()]
        return records

    @staticmethod
    def _record(container, filename: str) -> str:
        try:
            stream, _ = container.get_archive(f"/srv/record/{filename}")
            with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
                member = tar.extractfile(tar.getmembers()[0])
                return member.read().decode(errors="replace") if member else ""
        except docker.errors.NotFound:
            return ""

    def stop_containers(self) -> None:
        """The sidecars, side by side; a sidecar still being created is removed as its creation ends."""
        with self._lock:
            self._stopped = True
            containers, self.containers = list(self.containers.values()), {}
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(remove_quietly, containers))

    def stop(self) -> None:
        """The sidecars, then the network: the caller has removed every other container it put on it."""
        self.stop_containers()
        if self.network is not None:
            remove_network(self.client, self.network.id, time.monotonic() + NETWORK_REMOVAL_SECONDS)
            self.network = None
