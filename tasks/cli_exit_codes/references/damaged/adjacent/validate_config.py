#!/usr/bin/env python3
"""Check a service configuration file before deploy.

Usage: python3 validate_config.py CONFIG.json
"""
from __future__ import annotations

import json
import sys
from typing import Any

EXIT_INVALID_CONFIG = 4


def load(path: str) -> Any:
    """Parse the JSON file at ``path``."""
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def validate(config: Any) -> list[str]:
    """Return a list of human-readable problems; empty when ``config`` is valid."""
    if not isinstance(config, dict):
        return ["configuration must be a JSON object"]
    problems = []
    name = config.get("name")
    if "name" not in config:
        problems.append("missing required key: name")
    elif not isinstance(name, str) or not name.strip():
        problems.append("name must be a non-empty string")
    port = config.get("port")
    if "port" not in config:
        problems.append("missing required key: port")
    elif not _is_int(port) or not 1 <= port <= 65535:
        problems.append("port must be an integer from 1 to 65535")
    workers = config.get("workers")
    if "workers" not in config:
        problems.append("missing required key: workers")
    elif not _is_int(workers) or workers < 1:
        problems.append("workers must be an integer of at least 1")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: validate_config.py CONFIG.json", file=sys.stderr)
        return 2
    config = load(argv[1])
    problems = validate(config)
    if problems:
        for problem in problems:
            print(f"{argv[1]}: {problem}", file=sys.stderr)
        return EXIT_INVALID_CONFIG
    print(f"{argv[1]}: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
