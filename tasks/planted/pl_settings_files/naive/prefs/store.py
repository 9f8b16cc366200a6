"""Settings files."""

import json


def save_settings(path, settings):
    """Write the dict `settings` to the JSON file at `path`, replacing it."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(settings, f, indent=2)


def load_settings(path):
    """The dict stored in the JSON file at `path`."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)
