from app.flags import is_enabled


def test_prefixed_variable_turns_the_flag_on():
    assert is_enabled("new_checkout", {"ACME_FF_NEW_CHECKOUT": "1"}) is True
    assert is_enabled("dark_mode", {"ACME_FF_DARK_MODE": "1"}) is True


def test_other_spellings_are_ignored():
    # FEATURE_ is the retired prefix; the bare names collide with other teams' variables.
    for name in ("FEATURE_NEW_CHECKOUT", "NEW_CHECKOUT", "FF_NEW_CHECKOUT"):
        assert is_enabled("new_checkout", {name: "1"}) is False, name


def test_prefixed_variable_set_to_zero_is_off():
    assert is_enabled("new_checkout", {"ACME_FF_NEW_CHECKOUT": "0"}) is False
