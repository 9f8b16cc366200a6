"""Values read from job config files."""

import re
from datetime import timedelta

_PART = re.compile(r"(\d+)([hms])")
_UNIT = {"h": "hours", "m": "minutes", "s": "seconds"}


def parse_timeout(text):
    """Parse a job timeout such as '90s', '5m', '2h' or '1h30m'."""
    if not text or not re.fullmatch(r"(?:\d+[hms])+", text):
        raise ValueError(f"malformed timeout: {text!r}")
    return timedelta(**{_UNIT[u]: int(n) for n, u in _PART.findall(text)})
