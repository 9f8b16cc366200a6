"""The shared embedder sidecar: one all-MiniLM-L6-v2 (images/embedder) for every arm with `embedder: shared`.

Fairness of embeddings (issue #13): products that accept an OpenAI-compatible /v1/embeddings endpoint get
the same weights, so a comparison can separate the product from its embedding model.

No network is opened for it. The sidecar joins the network namespace of the one container it serves
(network_mode "container:<id>", as a Kubernetes pod's sidecar does) and listens on 127.0.0.1 only, so that
container reaches it at EMBEDDER_URL and no other container can. For a container whose command runs at
start (the ingest) the order is reversed: the embedder starts first on network 'none' and the arm container
joins its namespace. Either way it carries the run/cell labels and is removed with the cell; a sidecar that
does not get ready in READY_SECONDS raises EmbedderNotReady, never a fallback to the product's own embedder.
"""

import json
import time
from dataclasses import dataclass

import docker.errors

from runner.env.containers import CELL_LABEL, ROLE_LABEL, RUN_LABEL, Limits, hardened, remove_quietly

PORT = 8890
EMBEDDER_URL = f"http://127.0.0.1:{PORT}/v1/embeddings"
READY_SECONDS = 60  # loading the ONNX model and answering once takes ~2 s idle, far more on a loaded machine
LIMITS = Limits(memory="512m", cpus=1.0, pids=64)
ROLE = "embedder"


class EmbedderNotReady(RuntimeError):
    """The shared embedder exited or did not print its ready line in time."""


@dataclass
class Embedder:
    container: object
    ready: dict  # its ready line: model, dimensions, model_sha256, tokenizer_sha256

    def records(self) -> list[dict]:
        """Its record so far, one JSON event per line (`ready`, then one `request` per call)."""
        lines = self.container.logs(stdout=True, stderr=False).decode(errors="replace").splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def usage(self) -> dict:
        """What the product asked of it: requests answered, texts embedded, requests refused."""
        requests = [r for r in self.records() if r.get("event") == "request"]
        ok = [r for r in requests if r.get("status") == 200]
        return {"requests": len(ok), "inputs": sum(r.get("inputs", 0) for r in ok), "refused": len(requests) - len(ok)}

    def stop(self) -> None:
        remove_quietly(self.container)


def start(client, image: str, *, run_id: str, cell_id: str, network: str, lifetime: int) -> Embedder:
    """Start the sidecar in `network` ('none', or 'container:<id>' to join that container's namespace) and
    wait, bounded, for its ready line. Removed again if it does not get ready. It exits after `lifetime`
    seconds even if the controller dies (it would otherwise hold the namespace it joined open forever)."""
    labels = {RUN_LABEL: run_id, CELL_LABEL: cell_id, ROLE_LABEL: ROLE}
    args = hardened(image, user="65534:65534", labels=labels, network=network, limits=LIMITS, read_only=True,
                    command=["timeout", str(lifetime), "memgrid-embedder", str(PORT), str(int(LIMITS.cpus))])
    container = client.containers.create(**args)
    try:
        try:
            container.start()
        except docker.errors.APIError as e:  # e.g. an image without memgrid-embedder
            raise EmbedderNotReady(f"the shared embedder sidecar could not start: {e.explanation}") from None
        return Embedder(container, _wait_ready(container))
    except BaseException:
        remove_quietly(container)
        raise


def _wait_ready(container) -> dict:
    deadline = time.monotonic() + READY_SECONDS
    while True:
        for line in container.logs(stdout=True, stderr=False).decode(errors="replace").splitlines():
            if line.startswith('{"') and json.loads(line).get("event") == "ready":
                return json.loads(line)
        container.reload()
        if container.status == "exited" or time.monotonic() > deadline:
            tail = container.logs(stdout=True, stderr=True)[-300:].decode(errors="replace").strip()
            why = "exited" if container.status == "exited" else f"not ready after {READY_SECONDS}s"
            raise EmbedderNotReady(f"the shared embedder sidecar {why}: {tail!r}")
        time.sleep(0.05)
