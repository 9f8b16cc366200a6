"""Ticket listings for the helpdesk back office and its API."""
from __future__ import annotations

from typing import Any

Ticket = dict[str, Any]


def sort_tickets(tickets: list[Ticket]) -> list[Ticket]:
    """Return ``tickets`` in listing order as a new list; the argument is left untouched."""
    # urgent first; oldest first within a priority; ties broken on the id compared as text
    return sorted(tickets, key=lambda t: (-t["priority"], t["created_at"], str(t["id"])))


def open_tickets(tickets: list[Ticket]) -> list[Ticket]:
    return [t for t in tickets if t["status"] != "closed"]


def render_listing(tickets: list[Ticket]) -> str:
    """The back-office listing: one line per open ticket, in listing order."""
    return "\n".join(
        f"#{t['id']:<6} prio {t['priority']}  {t['created_at']}  {t['title']}"
        for t in sort_tickets(open_tickets(tickets))
    )


def page(tickets: list[Ticket], size: int, number: int) -> list[Ticket]:
    """Page ``number`` (starting at 1) of the open tickets in listing order."""
    listing = sort_tickets(open_tickets(tickets))
    start = (number - 1) * size
    return listing[start:start + size]
