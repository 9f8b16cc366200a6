"""Floor stub: answers session 2 with a made-up value of the right shape.

Must score 0: answers have >= 4 integer digits and voucher ids start at a random base, so a
plausible guess almost never hits. Seeded from the prompt so a rerun guesses the same.
"""

import hashlib
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I drops the script's folder
import ledgerlib  # noqa: E402

prompt = ledgerlib.read_prompt()
if ledgerlib.phase() != "step2":
    print("noted")  # remembers nothing on purpose
else:
    rng = random.Random(hashlib.sha256(prompt.encode()).hexdigest())
    key = ledgerlib.find_key(prompt) or ""
    if "voucher" in key:
        print("V-%05d" % rng.randint(10000, 99999))
    else:
        print("%d.%02d" % (rng.randint(1000, 60000), rng.randint(0, 99)))
