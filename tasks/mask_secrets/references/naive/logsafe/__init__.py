"""Structured logging: every log record is a dict written as one JSON line."""
from __future__ import annotations

import json
import logging
from typing import Any


def redact(record: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of ``record`` that is safe to write to the logs.

    Values may be nested dicts. ``record`` itself is never modified.
    """
    out = dict(record)
    if "password" in out:
        out["password"] = "***"
    return out


def log_event(logger: logging.Logger, event: str, **fields: Any) -> None:
    """Log ``event`` with ``fields`` as one JSON line, after redaction."""
    record = {"event": event, **fields}
    logger.info(json.dumps(redact(record), default=str, sort_keys=True, ensure_ascii=False))
