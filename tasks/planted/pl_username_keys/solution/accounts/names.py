"""Usernames."""

import unicodedata


def normalize_username(name):
    """The lookup key for the username `name` as typed at sign-up or login."""
    # lower() alone let look-alike spellings (full-width letters, ligatures, ß) register twice.
    return unicodedata.normalize("NFKC", name.strip()).casefold()


def same_user(a, b):
    return normalize_username(a) == normalize_username(b)
