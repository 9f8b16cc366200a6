import json

from jobs.config import parse_timeout


def test_timeouts_are_int_seconds():
    for text, seconds in [("90s", 90), ("5m", 300), ("2h", 7200), ("1h30m", 5400)]:
        value = parse_timeout(text)
        # bool is an int subclass and float compares equal: only a real int is the API's type.
        assert type(value) is int, f"{text}: {type(value).__name__}"
        assert value == seconds


def test_value_serialises_for_the_web_ui():
    assert json.dumps({"timeout": parse_timeout("2h")}) == '{"timeout": 7200}'
