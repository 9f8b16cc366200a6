"""Shared by the two-session stub agents: read a ledger the way an agent would, from prompt text.

Deliberately independent of cases.py (which generates the ledgers): it parses the markdown table
and the value's name out of text and does its own arithmetic, so the ceiling stub agreeing with the
gold on every case cross-checks both. Standard library only: the stubs run with `python3 -I` in a
bare sandbox.
"""

import os
import re
import sys

# The value's name as both prompts quote it: `AR-7F3K total debits in 2026-03`.
KEY_RE = re.compile(r"(AR-[0-9A-Z]{4}) (closing balance|total debits in (\d{4}-\d{2})|total debits for ([^`=\n]+?)"
                    r"|voucher of the largest debit|voucher of the (\d)(?:st|nd|rd|th) largest debit)")
LEDGER_ID_RE = re.compile(r"\bAR-[0-9A-Z]{4}\b")
ROW_RE = re.compile(r"^\|\s*(\d{4}-\d{2}-\d{2})\s*\|\s*(V-\d+)\s*\|\s*([^|]*?)\s*\|\s*([\d,.]*)\s*\|"
                    r"\s*([\d,.]*)\s*\|\s*([\d,.]*)\s*\|\s*$", re.MULTILINE)
OPENING_RE = re.compile(r"Opening balance:\s*([\d,]+\.\d\d)")
VOUCHER_RE = re.compile(r"\bV-\d+\b")
MONEY_RE = re.compile(r"\b\d{1,3}(?:,\d{3})*\.\d\d\b")


def read_prompt():
    """The prompt: the file the harness names, else stdin."""
    path = os.environ.get("MEMGRID_PROMPT_FILE")
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except OSError:
            pass
    return sys.stdin.read()


def phase():
    return os.environ.get("MEMGRID_PHASE", "")


def notes_path():
    """NOTES.md in the store, the only thing session 2 gets from session 1; None without a store."""
    store = os.environ.get("MEMGRID_STORE")
    return os.path.join(store, "NOTES.md") if store else None


def cents(text):
    """'12,345.67' -> 1234567; '' -> 0."""
    text = text.replace(",", "").strip()
    if not text:
        return 0
    units, _, frac = text.partition(".")
    return int(units) * 100 + int((frac + "00")[:2])


def money(c):
    return "%d.%02d" % (c // 100, c % 100)


def find_key(text):
    """The value's name quoted in backticks in `text` (its `= <value>` tail dropped), or None."""
    for span in re.findall(r"`([^`\n]+)`", text):
        span = span.split(" = ")[0].strip()
        if KEY_RE.fullmatch(span):
            return span
    return None


def has_row(text):
    return ROW_RE.search(text) is not None


def parse_table(text):
    """{'opening': cents or None, 'rows': [(date, voucher, counterparty, debit, credit, balance)]}"""
    rows = [(d, v, cp, cents(dr), cents(cr), cents(bal)) for d, v, cp, dr, cr, bal in ROW_RE.findall(text)]
    m = OPENING_RE.search(text)
    return {"opening": cents(m.group(1)) if m else None, "rows": rows}


def compute(key, table):
    """The value named by `key` over `table`, as an answer string; None when it cannot be found."""
    m = KEY_RE.fullmatch(key)
    rows = table["rows"]
    if not m or not rows:
        return None
    what, month, counterparty, nth = m.group(2), m.group(3), m.group(4), m.group(5)
    if what == "closing balance":
        # Recomputed from the opening balance, not read off the last row: a second derivation of it.
        if table["opening"] is None:
            return money(rows[-1][5])
        return money(table["opening"] + sum(r[3] for r in rows) - sum(r[4] for r in rows))
    if month:
        return money(sum(r[3] for r in rows if r[0][:7] == month))
    if counterparty:
        return money(sum(r[3] for r in rows if r[2] == counterparty.strip()))
    n = int(nth) if nth else 1
    debits = sorted((r for r in rows if r[3] > 0), key=lambda r: -r[3])
    return debits[n - 1][1] if len(debits) >= n else None


def answer_from(text, key):
    """The value of `key` from a ledger found in `text` (a leaked prompt, a file), or None."""
    ledger_id = key.split(" ")[0]
    if ledger_id not in text or not has_row(text):
        return None
    return compute(key, parse_table(text))
