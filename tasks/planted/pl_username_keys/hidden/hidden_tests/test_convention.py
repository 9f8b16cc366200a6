from accounts.names import same_user


def test_full_width_letters_are_the_same_user():
    assert same_user("\uff4a\uff4f\uff48\uff4e", "john")  # full-width 'john'


def test_compatibility_characters_are_folded():
    assert same_user("\ufb01sh", "fish")  # the 'fi' ligature


def test_case_is_folded_not_just_lowered():
    assert same_user("Stra\u00dfe", "STRASSE")
