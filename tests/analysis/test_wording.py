"""Numbers worded for people (analysis/wording.py): figures to three significant digits
with no exponent, a rate with its interval, and a rate with no verdict said in words."""

from __future__ import annotations

import math

import pytest

from checkllm_batch.analysis.wording import number, rate_text, value_text

NUMBERS = [  # (value, shown)
    (None, "n/a"), (math.nan, "n/a"), (0, "0"), (0.0, "0"), (7, "7"), (1234567, "1,234,567"),
    (2.0, "2"), (0.7142857142857143, "0.714"), (0.05, "0.05"), (0.0625, "0.0625"),
    (0.000254, "0.000254"), (12.345, "12.3"), (1234.5, "1,234"), (-0.5, "-0.5"),
    (math.inf, "inf"),
]


@pytest.mark.parametrize("value, shown", NUMBERS)
def test_number(value, shown):
    assert number(value) == shown


RATES = [  # (rate, low, high, errors, shown)
    (0.7333, 0.6479, 0.8043, 0, "73.3 % [64.8, 80.4]"),
    (1.0, 0.9, 1.0, None, "100.0 % [90.0, 100.0]"),
    (0.0, 0.0, 0.2, 0, "0.0 % [0.0, 20.0]"),  # a rate of 0 with verdicts is 0 %
    (0.5, None, None, None, "50.0 %"),
    (None, None, None, 12, "no verdicts (12 errors)"),  # every case errored
    (None, None, None, 0, "no verdicts (0 errors)"),  # every case skipped
    (None, None, None, None, "no verdicts"),
]


@pytest.mark.parametrize("rate, low, high, errors, shown", RATES)
def test_rate_text(rate, low, high, errors, shown):
    assert rate_text(rate, low, high, errors) == shown


def test_value_text():
    assert value_text(0.908, 0.8537, 0.9554) == "0.908 [0.854, 0.955]"
    assert value_text(3.0) == "3"
