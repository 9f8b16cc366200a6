"""Values read from job config files."""

import re

_PART = re.compile(r"(\d+)([hms])")
_UNIT = {"h": 3600, "m": 60, "s": 1}


def parse_timeout(text):
    """Parse a job timeout such as '90s', '5m', '2h' or '1h30m' into whole seconds (an int)."""
    if not text or not re.fullmatch(r"(?:\d+[hms])+", text):
        raise ValueError(f"malformed timeout: {text!r}")
    return sum(int(n) * _UNIT[u] for n, u in _PART.findall(text))
