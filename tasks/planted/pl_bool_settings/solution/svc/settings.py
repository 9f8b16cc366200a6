"""Settings read from the environment at start-up."""

import os

BOOLEAN = ("DEBUG", "MAINTENANCE_MODE")


def parse_bool(value):
    """The boolean a setting's string `value` stands for; ValueError if it is not a boolean."""
    # Lenient spellings let a typo switch a setting off silently; refuse to start instead.
    if value == "true":
        return True
    if value == "false":
        return False
    raise ValueError(f"not a boolean setting (write true or false): {value!r}")


def load_settings(environ=None):
    environ = os.environ if environ is None else environ
    return {name: parse_bool(environ[name]) for name in BOOLEAN if name in environ}
