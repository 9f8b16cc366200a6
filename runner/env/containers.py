"""What every container memgrid starts shares: the labels a run's containers are found (and removed) by, resource
limits, the hardened create arguments, and a removal that tolerates a container already gone. The sandbox, the
checker and the sidecars (model endpoint, embedder) all build on this module, which builds on none of them."""

import time
from dataclasses import dataclass

import docker.errors
import docker.types

RUN_LABEL = "memgrid.run"
CELL_LABEL = "memgrid.cell"
ROLE_LABEL = "memgrid.role"


@dataclass(frozen=True)
class Limits:
    memory: str = "1g"
    cpus: float = 1.0
    pids: int = 256


def memory_bytes(value: str) -> int:
    """'1g' / '512m' / '1024k' / bytes, as the engine reads a memory limit."""
    units = {"k": 2**10, "m": 2**20, "g": 2**30}
    value = value.strip().lower()
    return int(float(value[:-1]) * units[value[-1]]) if value[-1] in units else int(value)


def hardened(image: str, *, user: str, labels: dict, network: str, limits: Limits, **kwargs) -> dict:
    """Container-create arguments shared by the sandbox, the checker and the sidecars.
    `network`: 'none', 'container:<id>' (join that container's namespace: the shared embedder sidecar), or the
    name of an internal network the harness created for this cell."""
    # A user-defined network goes in `network` (docker-py drops networking_config, and with it any
    # alias, when only network_mode is given).
    where = {"network_mode": network} if network == "none" or network.startswith("container:") else {"network": network}
    # The engine keeps a container's own output in a log file on the host: bounded, whoever prints.
    log_config = docker.types.LogConfig(type="json-file", config={"max-size": "16m", "max-file": "1"})
    return dict(log_config=log_config,
        image=image, user=user, labels=labels, **where,
        cap_drop=["ALL"], security_opt=["no-new-privileges"],
        pids_limit=limits.pids, mem_limit=limits.memory, memswap_limit=limits.memory,
        nano_cpus=int(limits.cpus * 1e9), detach=True, **kwargs,
    )


GONE_SECONDS = 60  # the bound on waiting for another removal of a container to end


def remove_quietly(container) -> None:
    """The container removed, with its volumes; gone already is fine. Returns only once it is gone."""
    try:
        container.remove(force=True, v=True)  # v: the sandbox's /sandbox volume goes with it
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as e:
        if e.status_code != 409:
            raise
        # 409: another removal of it is under way (another thread's, the run's sweep), which can still fail:
        # it is done when the container is gone, not when the engine says someone is on it.
        wait_gone(container, time.monotonic() + GONE_SECONDS)


def wait_gone(container, deadline: float) -> None:
    api = container.client.api
    while time.monotonic() < deadline:
        try:
            api.inspect_container(container.id)
        except docker.errors.NotFound:
            return
        time.sleep(0.2)
    try:  # the other removal never ended: once more, ourselves
        container.remove(force=True, v=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as e:
        raise RuntimeError(f"container {container.id[:12]} was still there {GONE_SECONDS}s after its removal was "
                           f"under way, and removing it again failed: {e}") from None
