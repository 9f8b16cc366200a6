import pytest

from svc.settings import parse_bool


def test_the_two_literals():
    assert parse_bool("true") is True
    assert parse_bool("false") is False


@pytest.mark.parametrize("value", ["1", "0", "yes", "no", "on", "off", "TRUE", "True", "False"])
def test_every_other_spelling_raises(value):
    with pytest.raises(ValueError):
        parse_bool(value)
