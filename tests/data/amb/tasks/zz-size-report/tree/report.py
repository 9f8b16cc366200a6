"""The nightly report line."""


def render(total: int) -> str:
    """The report line for `total` bytes processed."""
    raise NotImplementedError
