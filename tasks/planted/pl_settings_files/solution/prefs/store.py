"""Settings files."""

import json


def save_settings(path, settings):
    """Write the dict `settings` to the JSON file at `path`, replacing it."""
    # The files are reviewed as diffs: one fixed layout keeps a change to one value a one-line diff.
    text = json.dumps(settings, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def load_settings(path):
    """The dict stored in the JSON file at `path`."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)
