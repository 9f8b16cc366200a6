"""A step started ahead of need on a thread of its own, so that it overlaps the caller's work (a cell's
sidecars start while its sandbox starts; its checker container starts while the session runs). The
caller waits for it with a bound, and a failure is raised naming the step."""

import threading
import time


class StartFailed(RuntimeError):
    """A step started ahead failed or did not finish within its bound; the message names the step."""


class Ahead:
    def __init__(self, what: str, fn, *args):
        self.what = what
        self.seconds: float | None = None  # how long the step took, once it ended
        self.error: BaseException | None = None
        self._value = None
        self._thread = threading.Thread(target=self._run, args=(fn, args), name=f"memgrid: {what}", daemon=True)
        self._thread.start()

    def _run(self, fn, args) -> None:
        started = time.monotonic()
        try:
            self._value = fn(*args)
        except BaseException as e:  # handed to whoever waits for the step
            self.error = e
        finally:
            self.seconds = round(time.monotonic() - started, 3)

    def wait(self, timeout: float) -> bool:
        """True once the step has ended (either way), waiting at most `timeout` seconds."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def result(self, timeout: float):
        if not self.wait(timeout):
            raise StartFailed(f"{self.what} did not finish within {timeout:.0f}s")
        if self.error is not None:
            raise StartFailed(f"{self.what} failed: {type(self.error).__name__}: {self.error}") from self.error
        return self._value

    def outcome(self, timeout: float) -> str:
        """What became of the step, for a message about another step's failure."""
        if not self.wait(timeout):
            return f"{self.what} had not finished after {timeout:.0f}s"
        if self.error is not None:
            return f"{self.what} failed too: {type(self.error).__name__}: {self.error}"
        return f"{self.what} succeeded"
