"""Helpers of pl_settings_files' judge, run in the artifact's process by memgrid_check.call(helpers=...)."""
import os
import pathlib
import tempfile


def saved(settings):
    """save_settings(tmp/'billing.json', settings) in a fresh folder (under the cwd, the artifact user's scratch
    home), then the bytes of the file written."""
    from prefs.store import save_settings
    path = pathlib.Path(tempfile.mkdtemp(dir=os.getcwd())) / "billing.json"
    save_settings(path, settings)
    with open(path, "rb") as fh:  # FileNotFoundError when nothing was written, as read_bytes() raised
        return fh.read()
