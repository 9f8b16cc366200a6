"""memgrid_check's typed-value codec (images/checker/memgrid_check.py, imported by path; no Docker): what the
artifact run encodes, the judge rebuilds from its own classes, keeping exact types, subclasses and ==."""
import datetime
import decimal
import enum
import importlib.util
import json
from collections import OrderedDict, defaultdict
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "memgrid_check_under_test", Path(__file__).resolve().parents[1] / "images" / "checker" / "memgrid_check.py")
mc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(mc)


class Status(enum.IntEnum):
    OK = 200


class Name(str):
    pass


class Cents(int):
    def __eq__(self, other):  # the artifact's methods never run judge-side
        return True

    __hash__ = int.__hash__


def round_trip(v):
    return mc.decode(json.loads(json.dumps(mc.encode(v))))


@pytest.mark.parametrize("v", [None, True, False, 0, -7, 2**80, 1.5, "x", "", b"\x00\xff", decimal.Decimal("1.20"),
                               datetime.date(2024, 3, 5), datetime.datetime(2024, 3, 5, 9, 30),
                               datetime.datetime(2024, 3, 5, 9, 30, tzinfo=datetime.timezone.utc),
                               datetime.time(7, 15), [1, "a", None], (1, (2, 3)), {"k": [1, {"n": (b"x",)}]},
                               {1: "a", (2, 3): "b"}, []])
def test_plain_values_come_back_equal_and_of_the_exact_type(v):
    got = round_trip(v)
    assert got == v and type(got) is type(v)
    if isinstance(v, (list, tuple)):
        assert [type(x) for x in got] == [type(x) for x in v]


def test_bool_is_the_singleton_and_not_an_int():
    assert round_trip(True) is True and round_trip(1) is not True and type(round_trip(1)) is int


def test_a_subclass_keeps_its_name_and_compares_as_its_base():
    got = round_trip(Status.OK)
    assert mc.encode(Status.OK) == ["i", 200, "Status"]
    assert got == 200 and type(got) is not int and isinstance(got, int) and type(got).__name__ == "Status"
    name = round_trip(Name("alice"))
    assert name == "alice" and type(name) is not str and type(name).__name__ == "Name"
    # its own __eq__ stays in the artifact: judge-side it is the int it holds
    assert round_trip(Cents(5)) != 6 and round_trip(Cents(5)) == 5
    d = round_trip(defaultdict(int, {"a": 1}))
    assert d == {"a": 1} and type(d) is not dict and type(d).__name__ == "defaultdict"
    assert round_trip(OrderedDict(a=1)) == {"a": 1}


def test_float_int_and_decimal_stay_apart():
    assert type(round_trip(1.0)) is float and type(round_trip(1)) is int
    assert type(round_trip(decimal.Decimal("12.34"))) is decimal.Decimal
    assert round_trip(datetime.datetime(2024, 3, 3)) != datetime.date(2024, 3, 3)


def test_anything_else_is_opaque_and_equals_nothing():
    got = round_trip(object())
    assert isinstance(got, mc.Opaque) and got != got and not got == 1 and got.type_name == "object"
    assert isinstance(round_trip({1, 2}), mc.Opaque)


@pytest.mark.parametrize("enc", [None, [], ["i"], ["i", "1"], ["i", True], ["b", 1], ["s", 1], ["f", "x"],
                                 ["i", 1, 2], ["by", "!!"], ["dec", "abc"], ["date", "nope"], ["l", {}],
                                 ["d", [[["s", "a"]]]], ["d", [[["l", []], ["n"]]]], ["zz", 1], ["o", "x"],
                                 ["ref", 0], ["i", 1, "a\x00b"]])
def test_malformed_forms_are_refused(enc):
    with pytest.raises((ValueError, TypeError)):
        mc.decode(enc)


def test_references_resolve_only_in_arguments():
    enc = mc.encode([(mc.Ref(2), 3)])
    assert enc == ["l", [["t", [["ref", 2], ["i", 3]]]]]
    assert mc.decode(enc, refs={2: "made"}) == [("made", 3)]


def test_result_records_are_validated():
    ok = {"i": 0, "returned": True, "type": "Status", "repr": "<Status.OK: 200>", "value": 200,
          "enc": mc.encode(Status.OK), "bases": ["int", "object"]}
    o = mc._record(dict(ok))
    assert o.returned and o.type == "Status" and o.got == 200 and o.bases == ("int", "object")
    raised = {"i": 0, "returned": False, "error": "BadValue", "message": "no", "timed_out": False,
              "bases": ["ValueError", "Exception", "BaseException", "object"]}
    e = mc._record(dict(raised))
    assert e.raised(ValueError) and e.raised("Exception") and not e.raised(KeyError)
    for bad in ({**ok, "extra": 1}, {**ok, "enc": ["i"]}, {**raised, "timed_out": 0}, {**raised, "bases": "x"}):
        with pytest.raises((ValueError, TypeError)):
            mc._record(bad)


def test_builtin_bases_of_an_exception():
    class Missing(KeyError):
        pass
    assert mc._builtin_bases(Missing)[:3] == ["KeyError", "LookupError", "Exception"]


def test_expectations_say_why():
    o = mc._record({"i": 0, "returned": True, "type": "float", "repr": "12.0", "value": 12.0,
                    "enc": ["f", 12.0], "bases": ["float", "object"]})
    assert mc.expect("f()", o, None, lambda v: v == 12, "12") is None
    assert "a float, expected an int" in mc.expect("f()", o, None, lambda v: type(v) is int, "an int")
    assert "gave no result: boom" in mc.expect("f()", None, "boom", lambda v: True, "x")
    assert mc.expect_raise("f()", o, None, ValueError) == "f() returned 12.0, expected ValueError"


def test_separate_calls_cannot_take_an_earlier_result():
    with pytest.raises(ValueError):
        mc._wire({"function": "f", "args": [mc.Ref(0)]}, True)
