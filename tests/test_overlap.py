"""Steps started ahead of need (runner/env/overlap.py): waited for with a bound, a failure named."""

import threading

import pytest

from runner.env.overlap import Ahead, StartFailed


def test_the_value_of_a_step_that_ended_well():
    step = Ahead("the answer", lambda: 42)
    assert step.result(5) == 42 and step.seconds is not None and step.outcome(5) == "the answer succeeded"


def test_a_failed_step_is_raised_by_name_with_its_cause():
    def broken():
        raise ValueError("engine said no")

    step = Ahead("the gateway's start", broken)
    with pytest.raises(StartFailed, match=r"^the gateway's start failed: ValueError: engine said no$") as caught:
        step.result(5)
    assert isinstance(caught.value.__cause__, ValueError)
    assert step.outcome(5) == "the gateway's start failed too: ValueError: engine said no"


def test_waiting_for_a_step_is_bounded():
    release = threading.Event()
    step = Ahead("a hung start", release.wait, 30)
    try:
        with pytest.raises(StartFailed, match="a hung start did not finish within 0s"):
            step.result(0.2)
        assert not step.wait(0.05) and step.outcome(0.05) == "a hung start had not finished after 0s"
    finally:
        release.set()
    assert step.wait(5)
