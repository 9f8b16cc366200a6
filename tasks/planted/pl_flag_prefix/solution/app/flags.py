"""Feature flags."""

import os

# The platform cluster is shared: the prefix keeps other teams' variables from switching our flags.
PREFIX = "ACME_FF_"
TRUE = {"1", "true", "yes", "on"}


def is_enabled(name, environ=None):
    """Whether feature flag `name` (e.g. 'new_checkout') is on; environ defaults to os.environ."""
    environ = os.environ if environ is None else environ
    return environ.get(PREFIX + name.upper(), "").strip().lower() in TRUE
