"""Files organisers download from the admin page."""

import csv

COLUMNS = ("name", "email", "ticket")


def export_attendees(attendees, path):
    """Write the attendees (dicts with name, email, ticket) to a CSV file at path; return the row count."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows({c: a[c] for c in COLUMNS} for a in attendees)
    return len(attendees)
