"""Numbers with their uncertainty, said in words for people: "openai:gpt-4o-mini 90.8 % →
85.0 %, −5.8 points [−9.9, −1.7] (95 %), p = 0.003: significant"."""

from __future__ import annotations

import math

import polars as pl

MINUS = "−"  # a typographic minus, as in the docs


def label(provider: str | None, prompt: str | None, prompts: int) -> str:
    name = provider if provider is not None else "(no provider)"
    return f"{name} · {prompt}" if prompts > 1 and prompt is not None else name


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def number(value: float | int | None) -> str:
    """A figure for people: integers with thousands separators, floats to three significant
    digits without an exponent or trailing zeros (0.714, 12.3, 0.05, 1,234, 0.000254); None and NaN as "n/a"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, int) or float(value).is_integer() and abs(value) >= 1:
        return f"{int(value):,}"
    if math.isinf(value) or value == 0:
        return str(value) if math.isinf(value) else "0"
    decimals = max(0, 2 - math.floor(math.log10(abs(value))))
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def rate_text(rate: float | None, low: float | None = None, high: float | None = None,
              errors: int | None = None) -> str:
    """A pass rate with its interval, "73.3 % [64.8, 80.4]"; a rate with no verdict (every
    case errored or skipped: the views' NULL) is "no verdicts (N errors)", never 0 %."""
    if rate is None or (isinstance(rate, float) and math.isnan(rate)):
        return f"no verdicts ({errors or 0:,} errors)" if errors is not None else "no verdicts"
    bounds = interval(low, high)
    return percent(rate) + (f" {bounds}" if bounds else "")


def value_text(value: float | None, low: float | None = None,
               high: float | None = None) -> str:
    """A metric's value with its interval, "0.908 [0.854, 0.955]"."""
    if low is None or high is None:
        return number(value)
    return f"{number(value)} [{number(low)}, {number(high)}]"


def points(value: float | None, sign: bool = True) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    text = f"{abs(100 * value):.1f}"
    return (MINUS if value < 0 and text != "0.0" else "+" if sign else "") + text


def bound(value: float | None) -> str:
    """An interval's end in points, its sign always shown (−0.0 for a bound just below
    0), so whether the interval excludes 0 reads the same in print as in the numbers."""
    if value is None or math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return MINUS + "∞" if value < 0 else "+∞"
    text = f"{abs(100 * value):.1f}"
    return text if value == 0 else (MINUS if value < 0 else "+") + text


def p_text(p: float | None) -> str:
    if p is None or math.isnan(p):
        return "p n/a"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3g}"


def interval(low: float | None, high: float | None) -> str:
    """A rate's interval in percent: "[80.1, 92.3]"."""
    if low is None or high is None:
        return ""
    return f"[{100 * low:.1f}, {100 * high:.1f}]"


def level_text(level: float | None) -> str:
    """An interval's confidence level: "95 %", "98.75 %"."""
    return "n/a" if level is None else f"{100 * level:.4g} %"


PASS_RATE_HEADING = (
    "pass rates, A → B: B − A over the cases matched in both runs, with its exact interval "
    "(conditional on the cases whose verdict changed: the interval that inverts the exact "
    "McNemar test) at the level Holm's procedure tests that row at, so it excludes 0 "
    "exactly when the row is significant; p Holm-adjusted, significant below {alpha:g}:")


def pass_rate_lines(rates: pl.DataFrame) -> list[str]:
    """One sentence per provider x prompt of a comparison's pass_rates."""
    prompts = rates["prompt"].n_unique() if rates.height else 0
    lines = []
    for row in rates.iter_rows(named=True):  # a few rows: one per provider x prompt
        verdict = "significant" if row["significant"] else "not significant"
        bounds = (f"[{bound(row['diff_low'])}, {bound(row['diff_high'])}] "
                  f"({level_text(row['level'])})" if row["level"] is not None
                  else "(no test: no matched case with a verdict on both sides)")
        lines.append(
            f"{label(row['provider'], row['prompt'], prompts)} "
            f"{rate_text(row['pass_rate_a'], errors=row['errors_a'])} → "
            f"{rate_text(row['pass_rate_b'], errors=row['errors_b'])}, {points(row['diff'])} "
            "points "
            f"{bounds}, "
            f"{p_text(row['p_adjusted'])}: {verdict}")
    return lines
