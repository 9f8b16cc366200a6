from audit.log import format_line


def test_event_first_then_fields_sorted_by_key():
    assert format_line("user.login", user="alice", ip="10.0.0.7") == "msg=user.login ip=10.0.0.7 user=alice"
    assert format_line("cart.updated", items=3) == "msg=cart.updated items=3"


def test_values_with_spaces_or_equals_are_double_quoted():
    assert format_line("note.added", text="hello world") == 'msg=note.added text="hello world"'
    assert format_line("query.run", sql="a=1") == 'msg=query.run sql="a=1"'
