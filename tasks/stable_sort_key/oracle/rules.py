"""Listing orders used by check.py (the fact) and detect.py (the wrong rules)."""


def fact_order(tickets):
    """Priority descending, created_at ascending, then the id compared as a string."""
    return [t["id"] for t in sorted(tickets, key=lambda t: (-t["priority"], t["created_at"], str(t["id"])))]


def stale_order(tickets):
    """Superseded rule: newest first (created_at descending, then id descending)."""
    return [t["id"] for t in sorted(tickets, key=lambda t: (t["created_at"], t["id"]), reverse=True)]


def rival_order(tickets):
    """Rival memo: priority descending, updated_at descending, then id ascending (numeric)."""
    result = sorted(tickets, key=lambda t: t["id"])
    result.sort(key=lambda t: t["updated_at"], reverse=True)
    result.sort(key=lambda t: t["priority"], reverse=True)
    return [t["id"] for t in result]


def adjacent_order(tickets):
    """Knowledge-base index convention: title case-insensitively, then id ascending (numeric)."""
    return [t["id"] for t in sorted(tickets, key=lambda t: (t["title"].casefold(), t["id"]))]


WRONG_RULES = {"superseded": stale_order, "contradictory": rival_order, "adjacent": adjacent_order}
