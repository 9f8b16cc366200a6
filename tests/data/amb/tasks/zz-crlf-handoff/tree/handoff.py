"""The nightly hand-off file the clearing house collects."""


def write_rows(path: str, rows: list[str]) -> None:
    """Write `rows` (already formatted, one string per row) to the hand-off file at `path`."""
    raise NotImplementedError
