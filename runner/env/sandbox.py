"""One container per cell (Harbor's environment): start, exec, put, get, stop.

Hardened by default: non-root user, every capability dropped, no-new-privileges, pids / memory /
CPU limits, network 'none' (or the cell's own internal network, whose only other members are the
harness's sidecars), no host mounts. Every container carries the run and cell labels so a
crashed run can be cleaned up by label, never by name.

The sandbox's root filesystem is read-only; what it can write is its disk budget: /sandbox (a
tmpfs volume of its own, removed with the container), /home/agent and /tmp, each a sized tmpfs, so
a write past the budget fails inside the sandbox with ENOSPC. This engine's storage driver
(overlay2 on ext4) cannot cap a container's writable layer, so the budget is memory-backed and the
container's memory limit is raised by it. Whatever the agent prints is captured bounded (head and
tail kept, the middle counted), and the workspace is exported as a stream that stops at the
artifact cap.
"""

import bisect
import contextlib
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable

import docker
import docker.errors
import docker.types

from runner.env import embedder
from runner.env.archive import Export, read_export
from runner.env.containers import CELL_LABEL, ROLE_LABEL, RUN_LABEL, Limits, hardened, memory_bytes, remove_quietly
from runner.plan.spec import DEFAULT_DISK_MIB

MIB = 2**20
AGENT_HOME = "/home/agent"


@dataclass(frozen=True)
class DiskBudget:
    """What the sandbox may write in all: /sandbox takes most, /home/agent and /tmp an eighth each
    (at most 256 MiB, at least 8), so the three sum to the budget."""
    mib: int = DEFAULT_DISK_MIB

    def mounts(self) -> dict[str, int]:
        side = max(8, min(256, self.mib // 8))
        return {"/sandbox": self.mib - 2 * side, AGENT_HOME: side, "/tmp": side}


# Bounds on what the controller keeps of a process's output: the head (a stream-json session's init)
# and the tail (its result); the middle is counted, not kept.
HEAD_BYTES = 8 * MIB
TAIL_BYTES = 8 * MIB


class BoundedCapture:
    """Keeps the first `head` and the last `tail` bytes of a stream with the time each chunk arrived,
    counting what falls between, so a process printing gigabytes costs the controller a bounded
    amount of memory. Lines cut by the bounds are dropped whole (and counted), never kept in part."""

    def __init__(self, head: int = HEAD_BYTES, tail: int = TAIL_BYTES):
        self.head_limit, self.tail_limit = head, tail
        self.head: list[tuple[float, bytes]] = []
        self.head_size = 0
        self.tail: deque[tuple[float, bytes]] = deque()
        self.tail_size = 0
        self.total = 0
        self.middle_bytes = 0  # dropped between head and tail
        self.middle_newlines = 0
        self.middle_ended_line = False

    def feed(self, data: bytes, now: float) -> None:
        self.total += len(data)
        room = self.head_limit - self.head_size
        if room > 0:
            self.head.append((now, data[:room]))
            self.head_size += min(room, len(data))
            data = data[room:]
        if not data:
            return
        self.tail.append((now, data))
        self.tail_size += len(data)
        while self.tail_size - len(self.tail[0][1]) >= self.tail_limit:
            _, old = self.tail.popleft()
            self.tail_size -= len(old)
            self.middle_bytes += len(old)
            self.middle_newlines += old.count(b"\n")
            self.middle_ended_line = old.endswith(b"\n")

    @staticmethod
    def _lines(chunks) -> list[tuple[float, bytes, bool]]:
        """(time, line, ended by a newline) for each line of the joined chunks; a line's time is its
        last chunk's."""
        data = b"".join(c for _, c in chunks)
        ends, times, offset = [], [], 0
        for t, c in chunks:
            offset += len(c)
            ends.append(offset)
            times.append(t)
        lines, start = [], 0
        while start < len(data):
            stop = data.find(b"\n", start)
            end = len(data) if stop < 0 else stop
            t = times[min(bisect.bisect_left(ends, end if stop < 0 else stop + 1), len(times) - 1)]
            lines.append((t, data[start:end], stop >= 0))
            start = end + 1
        return lines

    def result(self) -> tuple[tuple[tuple[float, str], ...], int, int]:
        """(lines with their arrival time, dropped bytes, dropped lines). Every line that lost a byte
        to the middle is dropped whole: the middle's newlines end that many, and one more is cut
        when the middle ends inside a line."""
        if not self.middle_bytes:
            kept = self._lines(self.head + list(self.tail))
            return tuple((t, line.decode(errors="replace")) for t, line, _ in kept), 0, 0
        head, tail = self._lines(self.head), self._lines(list(self.tail))
        if head and not head[-1][2]:
            head.pop()
        if tail and not self.middle_ended_line:
            tail.pop(0)
        kept = [(t, line) for t, line, _ in head + tail]
        kept_bytes = sum(len(line) + 1 for _, line in kept)
        return (tuple((t, line.decode(errors="replace")) for t, line in kept), max(0, self.total - kept_bytes),
                self.middle_newlines + (0 if self.middle_ended_line else 1))


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str
    seconds: float
    dropped_bytes: int = 0  # output not kept (bounded capture); 0 when all of it was kept

    @property
    def timed_out(self) -> bool:
        return self.exit_code in (124, 137)  # coreutils timeout: TERM -> 124, KILL -> 137


@dataclass(frozen=True)
class StreamedExec(ExecResult):
    lines: tuple[tuple[float, str], ...] = ()  # kept stdout lines with the host's monotonic time of arrival
    stdout_bytes: int = 0  # all the process printed on stdout, kept or not
    stdout_dropped_bytes: int = 0
    stdout_dropped_lines: int = 0


def exec_in(client, container_id: str, cmd: list[str], *, timeout: int, workdir: str, env: dict | None = None,
            user: str = "") -> StreamedExec:
    """Run a command inside a running container, bounded in time (coreutils timeout: the engine's exec has
    no timeout of its own) and in what is kept of its output; stdout lines are timed as they arrive
    (when a CLI reached its init, when it ended)."""
    api = client.api
    started = time.monotonic()
    exec_id = api.exec_create(container_id, ["timeout", "--kill-after=5", str(timeout), *cmd],
                              workdir=workdir, environment=env or {}, user=user)["Id"]
    out, err = BoundedCapture(), BoundedCapture(head=MIB, tail=MIB)
    for stdout, stderr in api.exec_start(exec_id, stream=True, demux=True):
        now = time.monotonic()
        if stdout:
            out.feed(stdout, now)
        if stderr:
            err.feed(stderr, now)
    code = api.exec_inspect(exec_id).get("ExitCode")
    lines, dropped, dropped_lines = out.result()
    err_lines, err_dropped, _ = err.result()
    return StreamedExec(code if code is not None else -1, "\n".join(line for _, line in lines),
                        "\n".join(line for _, line in err_lines), time.monotonic() - started,
                        dropped + err_dropped, lines, out.total, dropped, dropped_lines)


# The engine can lose the whole output of an exec that ends within moments (moby/moby#27289, docker/docker-py#2042):
# measured here (benchmarks/exec_output_loss.py), a bundle verifier that exited 0 in 0.3 s came back with neither
# stdout nor stderr once in some hundreds of runs, eight containers at once on a busy 2-core machine. A probe that
# prints on every run of it is read again when that happens, at most PROBE_READS times in all.
PROBE_READS = 3


def probe(run: Callable[[], StreamedExec], reads: int = PROBE_READS) -> tuple[StreamedExec, int]:
    """`run` (a read-only command of memgrid's that prints every time it runs: the bundle verifier, a listing) until
    it returns output, ends in a time-out or kill, or `reads` runs are spent; the last result and how many runs came
    back empty and were read again."""
    lost = 0
    while True:
        result = run()
        if result.stdout.strip() or result.stderr.strip() or result.timed_out or lost + 1 >= reads:
            return result, lost
        lost += 1


def remove_run_containers(client: docker.DockerClient, run_id: str, wait_seconds: float = 30) -> list[str]:
    """Remove every container of one run, found by its run label, waiting (bounded) until none is
    left; then the run's networks. Returns what it removed ("role container-name", "network name").

    Uses the bare list call: the model-level list inspects each container, which races with
    containers being removed concurrently (a finishing cell) and fails with NotFound."""
    label = {"label": f"{RUN_LABEL}={run_id}"}
    deadline = time.monotonic() + wait_seconds
    removed = []
    while listed := client.api.containers(all=True, filters=label):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(listed)} containers of run {run_id} could not be removed")
        for c in listed:
            try:
                client.api.remove_container(c["Id"], force=True, v=True)
                removed.append(f"{c['Labels'].get(ROLE_LABEL, 'container')} {c['Names'][0].lstrip('/')}")
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as e:
                if e.status_code != 409:  # 409: a removal is already in progress
                    raise
        time.sleep(0.1)
    for net in client.api.networks(filters=label):  # claude-code cells' networks
        remove_network(client, net["Id"], deadline)
        removed.append(f"network {net['Name']}")
    return removed


def remove_network(client: docker.DockerClient, network_id: str, deadline: float) -> None:
    """Remove a network whose containers are gone. The engine can still list an endpoint of a container it
    has just removed ("has active endpoints", 403): that endpoint is disconnected by force, until `deadline`."""
    while True:
        try:
            client.api.remove_network(network_id)
            return
        except docker.errors.NotFound:
            return
        except docker.errors.APIError as e:
            if e.status_code != 403 or time.monotonic() > deadline:
                raise
        try:
            endpoints = client.api.inspect_network(network_id).get("Containers") or {}
        except docker.errors.NotFound:
            return
        for endpoint in endpoints:
            try:
                client.api.disconnect_container_from_network(endpoint, network_id, force=True)
            except docker.errors.APIError:  # gone meanwhile, or already being disconnected
                pass
        time.sleep(0.1)


def lifetime_ran_out(container, lifetime: str, unread: str) -> str | None:
    """Why a container that only sleeps out its lifetime (a sandbox, a checker) can no longer be trusted, once its
    first process has exited 0: the sleep ended, no signal (which ends it non-zero) and no memory kill. None while it
    runs, when it is gone, or when it stopped any other way."""
    if container is None:
        return None
    try:
        container.reload()
    except docker.errors.APIError:
        return None
    state = container.attrs.get("State", {})
    if state.get("Running", True) or state.get("ExitCode") != 0 or state.get("OOMKilled"):
        return None
    return (f"{lifetime} ran out (its first process exited at {state.get('FinishedAt', '?')}) before memgrid had read "
            f"{unread}: the controller was paused or slowed past it; the cell runs again")


@contextlib.contextmanager
def expiry_checked(expired):
    """Reads from a container that sleeps out its lifetime: when `expired()` says the lifetime ran out, during the
    reads or by their end, raise SandboxExpired (a read cut short or refused is then memgrid's fault, not a verdict)."""
    try:
        yield
        if why := expired():
            raise SandboxExpired(why)
    except Exception as e:
        if not isinstance(e, SandboxExpired) and (why := expired()):
            raise SandboxExpired(why) from e
        raise


class SandboxExpired(Exception):
    """The sandbox stopped because its lifetime ran out before memgrid had read the session: the controller was
    paused or slowed past it (its host stalled, SIGSTOP, a debugger). The agent cannot end the first process that
    keeps the container up (it is root's; everything the agent runs is another user's), so this is memgrid's own
    fault: the cell is discarded `sandbox_expired` and run again, never scored from a half-read session."""


class Sandbox:
    """The agent's container. Lives at most `lifetime` seconds even if the controller dies.

    Its first process only sleeps out that lifetime. The bundle is placed once it runs (its /sandbox
    is a tmpfs that exists only then) and verified inside it by the bundle verifier before the
    harness runs anything else there; nothing of the agent's runs before that.
    """

    def __init__(self, client, image: str, run_id: str, cell_id: str, *, bundle_tar: bytes, lifetime: int,
                 network: str = "none", limits: Limits = Limits(), user: str = "1000:1000",
                 disk: DiskBudget = DiskBudget(), embedder: str | None = None):
        self.lifetime = lifetime
        self.started_seconds: float | None = None
        # The shared embedder's image, for an arm with `embedder: shared`: started in this container's network
        # namespace (runner/env/embedder.py). A sidecar that does not get ready leaves `embedder_failure` set
        # for the gate to discard the cell by name; the harness never lets the product embed on its own instead.
        self.embedder_image = embedder
        self.embedder = None
        self.embedder_failure: str | None = None
        self.client = client
        self.bundle_tar = bundle_tar
        self.disk = disk
        self.labels = {RUN_LABEL: run_id, CELL_LABEL: cell_id, ROLE_LABEL: "sandbox"}
        uid, _, gid = user.partition(":")
        sizes = disk.mounts()
        workspace = docker.types.Mount(
            "/sandbox", None, type="volume", labels=self.labels,
            driver_config=docker.types.DriverConfig("local", {
                "type": "tmpfs", "device": "tmpfs", "o": f"size={sizes['/sandbox']}m,uid={uid},gid={gid or uid},mode=0755"}))
        memory = memory_bytes(limits.memory) + disk.mib * MIB  # tmpfs pages count against the memory limit
        # The first process (it only sleeps) is root's, without capabilities; everything else runs as `user`
        # (exec). A process of the agent's own user could be traced and made to exit, which stops the container
        # and unmounts the workspace before the export: the cell would end in a harness error, rerun on resume.
        self.user = user
        self.create_args = hardened(image, user="0:0", labels=self.labels, network=network, limits=limits,
                                    command=["sleep", str(lifetime)], working_dir="/sandbox")
        self.create_args.update(
            mem_limit=memory, memswap_limit=memory, read_only=True, mounts=[workspace],
            tmpfs={AGENT_HOME: f"size={sizes[AGENT_HOME]}m,uid={uid},gid={gid or uid},mode=0700,exec",
                   "/tmp": f"size={sizes['/tmp']}m,mode=1777,exec"},
            # No IPv6 at all: a link-local address would otherwise reach the host's side of the bridge.
            sysctls={"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"})
        self.container = None

    def start(self) -> None:
        started = time.monotonic()
        self.container = self.client.containers.create(**self.create_args)
        try:
            self.container.start()
            self.put("/sandbox", self.bundle_tar)
            if self.embedder_image is not None:
                self._start_embedder()
        except BaseException:
            self.stop()
            raise
        self.started_seconds = time.monotonic() - started

    def _start_embedder(self) -> None:
        try:
            self.embedder = embedder.start(self.client, self.embedder_image, run_id=self.labels[RUN_LABEL],
                                           cell_id=self.labels[CELL_LABEL], network=f"container:{self.container.id}",
                                           lifetime=self.lifetime)
        except embedder.EmbedderNotReady as e:
            self.embedder_failure = str(e)

    def expired(self) -> str | None:
        """Why the sandbox cannot be trusted to hold the session any more, when its first process has exited 0: that is
        `sleep` having slept out the whole lifetime (a signal ends it non-zero). None while it runs, or when it is
        gone or stopped any other way (those fail where they are read, as before)."""
        return lifetime_ran_out(self.container, f"the sandbox's lifetime of {self.lifetime}s", "the session")

    def verification_report(self, timeout: float) -> StreamedExec:
        """The bundle verifier run inside the container: its last line is its JSON report."""
        return self.exec(["memgrid-verify-bundle", "/sandbox"], timeout=max(1, int(timeout)), workdir="/sandbox")

    def put(self, path: str, tar_bytes: bytes) -> None:
        if not self.container.put_archive(path, tar_bytes):
            raise RuntimeError(f"put_archive to {path} was refused")

    def exec(self, cmd: list[str], *, timeout: int, workdir: str = "/sandbox/workspace", env: dict | None = None) -> StreamedExec:
        return exec_in(self.client, self.container.id, cmd, timeout=timeout, workdir=workdir, env=env, user=self.user)

    def export(self, path: str, cap_bytes: int) -> Export:
        """The folder at `path` as the agent left it, read as a stream that stops at `cap_bytes` of file
        content: links and special files dropped and listed, never followed."""
        stream, _ = self.container.get_archive(path, chunk_size=MIB)
        try:
            return read_export(stream, strip=path.rstrip("/").rsplit("/", 1)[-1], cap_bytes=cap_bytes)
        finally:
            stream.close()  # over the cap: the engine stops sending once the connection is gone

    def read_text(self, path: str, cap_bytes: int = MIB) -> str:
        """The first `cap_bytes` of a file the phase left (an arm's log), as text; "" when it is absent. Read
        through exec, whose output is bounded, so a flooded file costs at most the cap."""
        return self.exec(["head", "-c", str(cap_bytes), path], timeout=30, workdir="/").stdout

    def full_mounts(self) -> list[str]:
        """The writable places the agent filled to their size (its disk budget was hit there)."""
        result = self.exec(["df", "-P", "-k", *self.disk.mounts()], timeout=30, workdir="/")
        full = []
        for line in result.stdout.splitlines()[1:]:
            fields = line.split()
            if len(fields) >= 6 and fields[1].isdigit() and fields[3].isdigit():
                size_kib, avail_kib = int(fields[1]), int(fields[3])
                if avail_kib * 100 < size_kib:  # under 1 % left: the budget was reached
                    full.append(f"{fields[5]} ({size_kib // 1024} MiB)")
        return full

    def stop(self) -> None:
        sidecar, self.embedder = self.embedder, None
        if sidecar is not None:  # before the container whose network namespace it lives in
            sidecar.stop()
        container, self.container = self.container, None
        if container is not None:
            remove_quietly(container)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
