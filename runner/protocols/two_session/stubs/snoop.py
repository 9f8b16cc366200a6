"""Floor stub: searches the file system for session 1's ledger instead of remembering it.

Must score 0 in a correct harness: session 2 runs in a fresh sandbox that holds nothing of session
1 but the store. A file (other than this session's prompt) naming the ledger id beside table rows
is a leak; the stub then answers from it and scores 1. Bounded: 20,000 files, files under 1 MiB,
20 seconds; /proc, /sys and /dev skipped; links not followed.

Test hook: MEMGRID_SNOOP_ROOTS (folders joined by os.pathsep) replaces the folders walked
recursively, so a host test need not walk the host's /.
"""

import os
import stat
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I drops the script's folder
import ledgerlib  # noqa: E402

MAX_FILES, MAX_BYTES, DEADLINE = 20_000, 1 << 20, time.monotonic() + 20
SKIP = {"/proc", "/sys", "/dev"}

prompt = ledgerlib.read_prompt()
if ledgerlib.phase() != "step2":
    print("noted")
    sys.exit(0)
key = ledgerlib.find_key(prompt)
own = os.path.realpath(os.environ.get("MEMGRID_PROMPT_FILE") or "/nonexistent")
roots = [r for r in os.environ.get("MEMGRID_SNOOP_ROOTS", "").split(os.pathsep) if r]
# Likely places first: the 20,000-file bound would be spent in /usr before reaching them.
roots = roots or ["/tmp", "/home", "/sandbox", "/var/tmp", "/root", "/"]
seen_dirs, read, found = set(), 0, None


def look(path):
    """The answer from the file at `path`, or None; counts it against the bound."""
    global read
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES or os.path.realpath(path) == own:
            return None  # FIFOs would block, links could loop, the own prompt names the ledger legitimately
        read += 1
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if key and key.split(" ")[0].encode() in data:
        return ledgerlib.answer_from(data.decode("utf-8", "replace"), key)
    return None


def budget_left():
    return read < MAX_FILES and time.monotonic() < DEADLINE


# The working folder and those above it, file by file: where step 1 would have left its inputs.
here = os.path.abspath(os.getcwd())
while key and not found and budget_left():
    try:
        names = sorted(os.listdir(here))
    except OSError:
        names = []
    for name in names:
        found = found or look(os.path.join(here, name))
    if os.path.dirname(here) == here:
        break
    here = os.path.dirname(here)
for root in roots:
    for folder, dirs, names in os.walk(root):
        real = os.path.realpath(folder)
        if not key or found or not budget_left() or real in seen_dirs:
            dirs[:] = []
            continue
        seen_dirs.add(real)
        dirs[:] = sorted(d for d in dirs if os.path.join(real, d) not in SKIP)
        for name in sorted(names):
            if found or not budget_left():
                break
            found = look(os.path.join(folder, name))
print("read %d files" % read)
print(found or "UNKNOWN")
