from prefs.store import save_settings

SETTINGS = {"service": "billing", "greeting": "Grüß Gott", "limits": {"per_minute": 120, "burst": 20}}

EXPECTED = """{
  "greeting": "Grüß Gott",
  "limits": {
    "burst": 20,
    "per_minute": 120
  },
  "service": "billing"
}
"""


def test_file_is_written_in_the_one_fixed_layout(tmp_path):
    path = tmp_path / "billing.json"
    save_settings(path, SETTINGS)
    assert path.read_bytes() == EXPECTED.encode("utf-8")
