"""Feature flags."""

import os

TRUE = {"1", "true", "yes", "on"}


def is_enabled(name, environ=None):
    """Whether feature flag `name` (e.g. 'new_checkout') is on; environ defaults to os.environ."""
    environ = os.environ if environ is None else environ
    return environ.get("FEATURE_" + name.upper(), "").strip().lower() in TRUE
