"""Settings for the tidepool worker.

Four sources feed the settings: the built-in ``DEFAULTS``, the config file
(``tidepool.toml``), ``TIDEPOOL_*`` environment variables and command-line flags.
"""
from __future__ import annotations

import argparse
import os
import tomllib
from typing import Any, Mapping

DEFAULTS: dict[str, Any] = {
    "workers": 4,
    "log_level": "info",
    "queue_url": "redis://localhost:6379/0",
    "batch_size": 100,
    "poll_seconds": 5.0,
}
ENV_PREFIX = "TIDEPOOL_"


def load_file(path: str) -> dict[str, Any]:
    """Settings from the TOML config file; an absent file means no settings."""
    if not os.path.exists(path):
        return {}
    with open(path, "rb") as fh:
        return dict(tomllib.load(fh))


def env_settings(environ: Mapping[str, str]) -> dict[str, Any]:
    """Settings from TIDEPOOL_* variables, converted to the type of the default."""
    out: dict[str, Any] = {}
    for key, default in DEFAULTS.items():
        raw = environ.get(ENV_PREFIX + key.upper())
        if raw is not None:
            out[key] = type(default)(raw)
    return out


def parse_cli(argv: list[str]) -> dict[str, Any]:
    """Flags as a dict; a flag that was not given is None."""
    parser = argparse.ArgumentParser(prog="tidepool")
    parser.add_argument("--config", default="tidepool.toml")
    parser.add_argument("--workers", type=int)
    parser.add_argument("--log-level", dest="log_level")
    parser.add_argument("--queue-url", dest="queue_url")
    parser.add_argument("--batch-size", dest="batch_size", type=int)
    parser.add_argument("--poll-seconds", dest="poll_seconds", type=float)
    return vars(parser.parse_args(argv))


def resolve_settings(defaults: Mapping[str, Any], file_cfg: Mapping[str, Any],
                     env: Mapping[str, Any], cli_args: Mapping[str, Any]) -> dict[str, Any]:
    """Combine the four sources into the settings the worker runs with.

    Precedence, highest first: environment > flags > config file > defaults.
    A flag that was not given (None) does not count as set; keys that are not
    settings are ignored.
    """
    lowest_first = (file_cfg, cli_args, env)
    settings = dict(defaults)
    for source in lowest_first:
        for key, value in source.items():
            if key in settings and value is not None:
                settings[key] = value
    return settings


def load_settings(argv: list[str], environ: Mapping[str, str]) -> dict[str, Any]:
    cli_args = parse_cli(argv)
    return resolve_settings(DEFAULTS, load_file(cli_args["config"]),
                            env_settings(environ), cli_args)
