"""Ceiling stub: what a working memory does. Must score 1 on every case.

Session 1 derives the value (ledgerlib, independent of the generator) and writes `<key> = <value>`
to the store; session 2, in a fresh sandbox, reads the store back. The store is the only channel,
so this passes exactly when the harness carries the store and nothing else is needed.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I drops the script's folder
import ledgerlib  # noqa: E402

prompt = ledgerlib.read_prompt()
notes = ledgerlib.notes_path()
if ledgerlib.phase() != "step2":
    key = ledgerlib.find_key(prompt)
    value = ledgerlib.compute(key, ledgerlib.parse_table(prompt)) if key else None
    if notes and value:
        with open(notes, "a", encoding="utf-8") as f:
            f.write("%s = %s\n" % (key, value))
    print("stored 1 note" if notes and value else "nothing stored")
else:
    found = None
    if notes and os.path.isfile(notes):
        with open(notes, encoding="utf-8") as f:
            pairs = [line.rstrip("\n").split(" = ", 1) for line in f if " = " in line]
        # The longest key the prompt names, so one key being a prefix of another cannot mislead it.
        hits = sorted((k for k, _ in pairs if k in prompt), key=len)
        if hits:
            found = dict(pairs)[hits[-1]]
    print(found or "UNKNOWN")
