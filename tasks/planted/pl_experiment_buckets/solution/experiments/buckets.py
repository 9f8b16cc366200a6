"""Experiment buckets."""

import zlib


def bucket(user_id):
    """The experiment bucket (0-99) of the user with id `user_id` (a str); stable across runs."""
    # The mobile SDK computes the same bucket on the device; both sides must agree bit for bit.
    return zlib.crc32(user_id.encode("utf-8")) % 100


def in_rollout(user_id, percent):
    return bucket(user_id) < percent
