"""The stock manifest the warehouse's import tool reads."""


def write_manifest(path: str, items: list[tuple[str, int]]) -> None:
    """Write one line per (name, quantity) pair to `path`: the name, a tab, the quantity."""
    raise NotImplementedError
