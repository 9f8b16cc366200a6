"""Floor stub: remembers every amount and voucher of the ledger, then answers with all of them.

Must score 0: the judge refuses a last line with several candidates even when the gold is among
them, otherwise listing everything would pass as memory.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I drops the script's folder
import ledgerlib  # noqa: E402

prompt = ledgerlib.read_prompt()
notes = ledgerlib.notes_path()
if ledgerlib.phase() != "step2":
    values = ledgerlib.VOUCHER_RE.findall(prompt) + [m.replace(",", "") for m in ledgerlib.MONEY_RE.findall(prompt)]
    if notes:
        with open(notes, "a", encoding="utf-8") as f:
            f.write(" ".join(dict.fromkeys(values)) + "\n")
    print("noted %d values" % len(values))
else:
    values = []
    if notes and os.path.isfile(notes):
        with open(notes, encoding="utf-8") as f:
            values = f.read().split()
    print(" ".join(values) if values else "UNKNOWN")
