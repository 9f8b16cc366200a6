import csv
import io

from events.export import export_attendees

ATTENDEES = [
    {"name": "Jürgen Weiß", "email": "jw@example.org", "ticket": "EARLY-17"},
    {"name": "Smith, Jo", "email": "jo@example.org", "ticket": "REG-9"},
]


def test_file_starts_with_a_utf8_bom(tmp_path):
    path = tmp_path / "a.csv"
    export_attendees(ATTENDEES, path)
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")


def test_fields_are_separated_by_semicolons(tmp_path):
    path = tmp_path / "a.csv"
    export_attendees(ATTENDEES, path)
    text = path.read_bytes().decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text), delimiter=";"))
    assert rows == [["name", "email", "ticket"],
                    ["Jürgen Weiß", "jw@example.org", "EARLY-17"],
                    ["Smith, Jo", "jo@example.org", "REG-9"]]
