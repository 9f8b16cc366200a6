"""Structured logging: every log record is a dict written as one JSON line."""
from __future__ import annotations

import json
import logging
from typing import Any

SECRET_PARTS = ("password", "token", "secret")


def _is_secret(key: Any) -> bool:
    return isinstance(key, str) and any(part in key.lower() for part in SECRET_PARTS)


def _mask(value: Any) -> str:
    text = str(value)
    if len(text) <= 10:
        return "#" * len(text)
    return text[:6] + "#" * (len(text) - 10) + text[-4:]


def redact(record: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of ``record`` that is safe to write to the logs.

    Values may be nested dicts. ``record`` itself is never modified.
    """
    out: dict[str, Any] = {}
    for key, value in record.items():
        if _is_secret(key):
            out[key] = _mask(value)
        elif isinstance(value, dict):
            out[key] = redact(value)
        else:
            out[key] = value
    return out


def log_event(logger: logging.Logger, event: str, **fields: Any) -> None:
    """Log ``event`` with ``fields`` as one JSON line, after redaction."""
    record = {"event": event, **fields}
    logger.info(json.dumps(redact(record), default=str, sort_keys=True, ensure_ascii=False))
