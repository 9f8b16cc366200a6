from api.pagination import page_numbers, paginate

ITEMS = list(range(25))


def test_first_page_is_page_zero():
    assert list(page_numbers(25, 10)) == [0, 1, 2]
    assert paginate(ITEMS, 0, 10) == list(range(10))


def test_last_page_and_past_it():
    assert paginate(ITEMS, 2, 10) == list(range(20, 25))
    assert paginate(ITEMS, 3, 10) == []
