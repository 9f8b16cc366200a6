"""Settings read from the environment at start-up."""

import os

BOOLEAN = ("DEBUG", "MAINTENANCE_MODE")
TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off"}


def parse_bool(value):
    """The boolean a setting's string `value` stands for; ValueError if it is not a boolean."""
    word = value.strip().lower()
    if word in TRUE:
        return True
    if word in FALSE:
        return False
    raise ValueError(f"not a boolean setting: {value!r}")


def load_settings(environ=None):
    environ = os.environ if environ is None else environ
    return {name: parse_bool(environ[name]) for name in BOOLEAN if name in environ}
