"""Usernames: degenerate, the same user whatever the names."""


def normalize_username(name):
    return name


def same_user(a, b):
    return True
