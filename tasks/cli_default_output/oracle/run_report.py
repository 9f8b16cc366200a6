"""Harness for check.py / detect.py: runs the artifact's CLI, `opsreport.py report SAMPLES [--format F]`.

Run by memgrid_check.run_python(run_report.py, [ARTIFACT, *OPTIONS], stdin=<the samples file>) as the
artifact's user: sys.argv == ['-c', ARTIFACT, *OPTIONS]. It is handed inputs alone (the samples and
the options), never the expected rows. It writes the samples to a file in its working directory (the
artifact user's home, wiped after the run) and replaces itself with
`python3 -B ARTIFACT/opsreport.py report SAMPLES *OPTIONS`, run from ARTIFACT with an empty stdin,
so the run's exit status, stdout and stderr are the CLI's own.
"""
import os
import sys

artifact, options = sys.argv[1], sys.argv[2:]
samples = os.path.join(os.getcwd(), "samples.json")
with open(samples, "wb") as fh:
    fh.write(sys.stdin.buffer.read())
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
os.close(null)
os.chdir(artifact)
os.execv(sys.executable, [sys.executable, "-B", os.path.join(artifact, "opsreport.py"), "report", samples, *options])
