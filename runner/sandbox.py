"""One container per cell (Harbor's environment): start, exec, put, get, stop.

Hardened by default: non-root user, every capability dropped, no-new-privileges, pids / memory /
CPU limits, network 'none' (or the cell's own internal network, whose only other members are the
harness's sidecars), no host mounts. Every container carries the run and cell labels so a
crashed run can be cleaned up by label, never by name.
"""

import time
from dataclasses import dataclass

import docker
import docker.errors

RUN_LABEL = "memgrid.run"
CELL_LABEL = "memgrid.cell"
ROLE_LABEL = "memgrid.role"


@dataclass(frozen=True)
class Limits:
    memory: str = "1g"
    cpus: float = 1.0
    pids: int = 256


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.exit_code in (124, 137)  # coreutils timeout: TERM -> 124, KILL -> 137


@dataclass(frozen=True)
class StreamedExec(ExecResult):
    lines: tuple[tuple[float, str], ...] = ()  # stdout lines with the host's monotonic time of arrival


def hardened(image: str, *, user: str, labels: dict, network: str, limits: Limits, **kwargs) -> dict:
    """Container-create arguments shared by the sandbox, the checker and the sidecars.
    `network`: 'none', or the name of an internal network the harness created for this cell."""
    # A user-defined network goes in `network` (docker-py drops networking_config, and with it any
    # alias, when only network_mode is given).
    where = {"network_mode": "none"} if network == "none" else {"network": network}
    return dict(
        image=image, user=user, labels=labels, **where,
        cap_drop=["ALL"], security_opt=["no-new-privileges"],
        pids_limit=limits.pids, mem_limit=limits.memory, memswap_limit=limits.memory,
        nano_cpus=int(limits.cpus * 1e9), detach=True, **kwargs,
    )


def remove_quietly(container) -> None:
    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as e:
        if e.status_code != 409:  # 409: another thread's removal is already in progress
            raise


def remove_run_containers(client: docker.DockerClient, run_id: str, wait_seconds: float = 30) -> None:
    """Remove every container of one run, found by its run label, waiting (bounded) until none is
    left; then the run's networks.

    Uses the bare list call: the model-level list inspects each container, which races with
    containers being removed concurrently (a finishing cell) and fails with NotFound."""
    label = {"label": f"{RUN_LABEL}={run_id}"}
    deadline = time.monotonic() + wait_seconds
    while ids := [c["Id"] for c in client.api.containers(all=True, filters=label)]:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(ids)} containers of run {run_id} could not be removed")
        for container_id in ids:
            try:
                client.api.remove_container(container_id, force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as e:
                if e.status_code != 409:  # 409: a removal is already in progress
                    raise
        time.sleep(0.1)
    for net in client.api.networks(filters={"label": f"{RUN_LABEL}={run_id}"}):  # claude-code cells' networks
        try:
            client.api.remove_network(net["Id"])
        except docker.errors.NotFound:
            pass


class Sandbox:
    """The agent's container. Lives at most `lifetime` seconds even if the controller dies.

    The bundle is placed before the container starts, and the container's first command is the
    bundle verifier, so the verification happens before anything else runs in it; its one-line
    report is read from the container's output.
    """

    def __init__(self, client, image: str, run_id: str, cell_id: str, *, bundle_tar: bytes, lifetime: int,
                 network: str = "none", limits: Limits = Limits(), user: str = "1000:1000"):
        self.started_seconds: float | None = None
        self.client = client
        self.bundle_tar = bundle_tar
        self.labels = {RUN_LABEL: run_id, CELL_LABEL: cell_id, ROLE_LABEL: "sandbox"}
        self.create_args = hardened(image, user=user, labels=self.labels, network=network, limits=limits,
                                    command=["sh", "-c", f"memgrid-verify-bundle /sandbox; exec sleep {lifetime}"],
                                    working_dir="/sandbox")
        self.container = None

    def start(self) -> None:
        started = time.monotonic()
        self.container = self.client.containers.create(**self.create_args)
        try:
            self.put("/sandbox", self.bundle_tar)
            self.container.start()
        except BaseException:
            self.stop()
            raise
        self.started_seconds = time.monotonic() - started

    def verification_report(self, timeout: float) -> str:
        """The verifier's line of output; bounded polling of the container's log."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.container.logs(stdout=True, stderr=False)
            if out.endswith(b"\n"):
                return out.decode(errors="replace").strip()
            time.sleep(0.005)
        return ""

    def put(self, path: str, tar_bytes: bytes) -> None:
        if not self.container.put_archive(path, tar_bytes):
            raise RuntimeError(f"put_archive to {path} was refused")

    def exec(self, cmd: list[str], *, timeout: int, workdir: str = "/sandbox/workspace", env: dict | None = None) -> ExecResult:
        # coreutils timeout bounds the exec inside the container; exec_run has no timeout of its own.
        started = time.monotonic()
        code, (out, err) = self.container.exec_run(
            ["timeout", "--kill-after=5", str(timeout), *cmd], workdir=workdir, environment=env or {}, demux=True)
        return ExecResult(code, (out or b"").decode(errors="replace"), (err or b"").decode(errors="replace"),
                          time.monotonic() - started)

    def exec_stream(self, cmd: list[str], *, timeout: int, workdir: str = "/sandbox/workspace",
                    env: dict | None = None) -> StreamedExec:
        """Like exec, but stdout lines are timed as they arrive (when the CLI reached init, when it ended)."""
        api = self.client.api
        started = time.monotonic()
        exec_id = api.exec_create(self.container.id, ["timeout", "--kill-after=5", str(timeout), *cmd],
                                  workdir=workdir, environment=env or {})["Id"]
        lines, partial, err = [], b"", []
        for out, error in api.exec_start(exec_id, stream=True, demux=True):
            if error:
                err.append(error)
            if out:
                partial += out
                *complete, partial = partial.split(b"\n")
                now = time.monotonic()
                lines += [(now, line.decode(errors="replace")) for line in complete]
        if partial:
            lines.append((time.monotonic(), partial.decode(errors="replace")))
        code = api.exec_inspect(exec_id).get("ExitCode")
        return StreamedExec(code if code is not None else -1, "\n".join(line for _, line in lines),
                            b"".join(err).decode(errors="replace"), time.monotonic() - started, tuple(lines))

    def get(self, path: str) -> bytes:
        stream, _ = self.container.get_archive(path)
        return b"".join(stream)

    def stop(self) -> None:
        container, self.container = self.container, None
        if container is not None:
            remove_quietly(container)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
