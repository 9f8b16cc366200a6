"""Errors a user can act on: the CLI prints them as one line and exits 2, no traceback."""


class UserError(Exception):
    """Bad input or a missing prerequisite, stated as: where, what, and the fix."""

    exit_code = 2


class SpecError(UserError):
    """A YAML spec that does not validate; the message names the file, the field and the fix."""

    def __init__(self, path, field: str, problem: str, fix: str):
        self.path, self.field, self.problem, self.fix = path, field, problem, fix
        super().__init__(f"{path}: {field}: {problem} — fix: {fix}")


class EngineError(UserError):
    """The Docker engine is missing or refused something the run needs."""


class DiskFull(UserError):
    """A disk the controller writes to (the run folder's) filled up: the run stopped with what it had recorded kept."""

    exit_code = 1
