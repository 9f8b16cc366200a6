"""Judge of pl_settings_files: python3 check.py /artifact

Saves, as the artifact's user through memgrid_check.call (helpers.py: save_settings into a fresh folder of its
scratch home, then the file's bytes), the old hidden test's settings, never the expected layout, and compares the
bytes here with the one canonical layout: sorted keys, 2-space indent, non-ASCII kept as UTF-8 and a trailing
newline. The old hidden test's one assertion (bytes equal).
"""
import os

from memgrid_check import call, expect, judge

SETTINGS = {"service": "billing", "greeting": "Grüß Gott", "limits": {"per_minute": 120, "burst": 20}}
EXPECTED = """{
  "greeting": "Grüß Gott",
  "limits": {
    "burst": 20,
    "per_minute": 120
  },
  "service": "billing"
}
""".encode("utf-8")


def checks(artifact):
    seen, problem = call(artifact, [{"function": "saved", "args": [SETTINGS]}], timeout=30,
                         helpers=os.path.join(os.path.dirname(os.path.abspath(__file__)), "helpers.py"))
    yield ("test_file_is_written_in_the_one_fixed_layout",
           expect("save_settings(tmp/'billing.json', SETTINGS) wrote", seen[0], problem,
                  lambda v: type(v) is bytes and v == EXPECTED, repr(EXPECTED)))
    yield None, problem


if __name__ == "__main__":
    judge(1, checks)
