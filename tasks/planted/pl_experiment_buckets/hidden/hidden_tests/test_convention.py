import zlib

from experiments.buckets import bucket

USERS = ["user-7", "alice@example.org", "Zoë", "", "8f14e45f-ceea-467f-a0e6-1d2b0b4b7f3c"] + [f"u{n}" for n in range(200)]


def test_bucket_matches_the_mobile_sdk():
    for user in USERS:
        assert bucket(user) == zlib.crc32(user.encode("utf-8")) % 100, user
