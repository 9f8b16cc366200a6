"""Lap times as the lap board shows them."""


def format_duration(seconds: int) -> str:
    """How the lap board shows a lap of `seconds` whole seconds."""
    raise NotImplementedError
