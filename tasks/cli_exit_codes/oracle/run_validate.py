"""Harness for check.py / detect.py: runs the artifact's CLI, `validate_config.py CONFIG.json`.

Run by memgrid_check.run_python(run_validate.py, [ARTIFACT], stdin=<the configuration file>) as the
artifact's user: sys.argv == ['-c', ARTIFACT]. It is handed the configuration alone (not its case
name, not the expected status). It writes it to config.json in its working directory (the artifact
user's home, wiped after the run) and replaces itself with
`python3 -B ARTIFACT/validate_config.py CONFIG`, run from ARTIFACT with an empty stdin, so the run's
exit status, stdout and stderr are the CLI's own.
"""
import os
import sys

artifact = sys.argv[1]
config = os.path.join(os.getcwd(), "config.json")
with open(config, "wb") as fh:
    fh.write(sys.stdin.buffer.read())
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
os.close(null)
os.chdir(artifact)
os.execv(sys.executable, [sys.executable, "-B", os.path.join(artifact, "validate_config.py"), config])
