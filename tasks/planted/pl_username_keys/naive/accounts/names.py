"""Usernames."""


def normalize_username(name):
    """The lookup key for the username `name` as typed at sign-up or login."""
    return name.strip().lower()


def same_user(a, b):
    return normalize_username(a) == normalize_username(b)
