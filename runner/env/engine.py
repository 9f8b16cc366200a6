"""The one way the controller reaches the Docker engine."""

import docker
import docker.errors

from runner.errors import EngineError

ENGINE_FIX = "start one with 'sudo scripts/ensure-engine.sh' (Debian, as root) or install Docker Engine"


def connect(timeout: int = 120, concurrency: int = 2) -> docker.DockerClient:
    try:
        # Each cell in flight holds a connection or two (a log stream, a wait), a submission's up to two for each of
        # its eight answer containers at once (protocols/personal/submission.py); the default pool is 10, and
        # urllib3 warns on the console each time a connection past the pool is dropped.
        client = docker.from_env(timeout=timeout, max_pool_size=max(10, 20 * concurrency))
        client.ping()
    except docker.errors.DockerException as e:
        raise EngineError(f"no Docker engine answers ({str(e).splitlines()[0][:160]}): fix: {ENGINE_FIX}") from None
    return client
