"""Floor stub: looks for session 1's ledger in the environment instead of remembering it.

Must score 0 in a correct harness: session 2 gets no variable holding, or pointing at, session 1's
inputs (scrubbed by value, not by name). When one does leak, this stub finds it and scores 1,
which is how the leak shows up.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I drops the script's folder
import ledgerlib  # noqa: E402

prompt = ledgerlib.read_prompt()
if ledgerlib.phase() != "step2":
    print("noted")
    sys.exit(0)
key = ledgerlib.find_key(prompt)
found, files = None, 0
for name, value in sorted(os.environ.items()):
    texts = [name + "=" + value]
    # A value may be a path, or a list of them: follow each to a regular file of at most 1 MiB.
    for part in value.split(os.pathsep):
        try:
            if part and os.path.isfile(part) and os.path.getsize(part) <= 1 << 20:
                with open(part, encoding="utf-8", errors="replace") as f:
                    texts.append(f.read())
                files += 1
        except OSError:
            pass
    for text in texts:
        found = found or (key and ledgerlib.answer_from(text, key))
print("inspected %d environment variables and %d files they name" % (len(os.environ), files))
print(found or "UNKNOWN")
