"""Experiment buckets."""

import hashlib


def bucket(user_id):
    """The experiment bucket (0-99) of the user with id `user_id` (a str); stable across runs."""
    digest = hashlib.sha256(user_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % 100


def in_rollout(user_id, percent):
    return bucket(user_id) < percent
