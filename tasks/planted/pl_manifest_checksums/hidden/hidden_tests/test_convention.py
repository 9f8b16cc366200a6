import hashlib

from release.manifest import manifest_entry


def test_checksum_is_sha256_with_its_algorithm_named(tmp_path):
    data = b"\x1f\x8b" + bytes(range(256)) * 40
    path = tmp_path / "tool-1.2.0.tar.gz"
    path.write_bytes(data)
    assert manifest_entry(path)["checksum"] == "sha256:" + hashlib.sha256(data).hexdigest()
