"""Numbers with their uncertainty, said in words for people: "openai:gpt-4o-mini 90.8 % →
85.0 %, −5.8 points [−9.9, −1.7], p = 0.003: significant"."""

from __future__ import annotations

import math

import polars as pl

MINUS = "−"  # a typographic minus, as in the docs


def label(provider: str | None, prompt: str | None, prompts: int) -> str:
    name = provider if provider is not None else "(no provider)"
    return f"{name} · {prompt}" if prompts > 1 and prompt is not None else name


def percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f} %"


def points(value: float | None, sign: bool = True) -> str:
    if value is None or math.isnan(value):
        return "n/a"
    text = f"{abs(100 * value):.1f}"
    return (MINUS if value < 0 and text != "0.0" else "+" if sign else "") + text


def p_text(p: float | None) -> str:
    if p is None or math.isnan(p):
        return "p n/a"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3g}"


def interval(low: float | None, high: float | None) -> str:
    """A rate's interval in percent: "[80.1, 92.3]"."""
    if low is None or high is None:
        return ""
    return f"[{100 * low:.1f}, {100 * high:.1f}]"


def pass_rate_lines(rates: pl.DataFrame) -> list[str]:
    """One sentence per provider x prompt of a comparison's pass_rates."""
    prompts = rates["prompt"].n_unique() if rates.height else 0
    lines = []
    for row in rates.iter_rows(named=True):  # a few rows: one per provider x prompt
        verdict = "significant" if row["significant"] else "not significant"
        lines.append(
            f"{label(row['provider'], row['prompt'], prompts)} {percent(row['pass_rate_a'])}"
            f" → {percent(row['pass_rate_b'])}, {points(row['diff'])} points "
            f"[{points(row['diff_low'])}, {points(row['diff_high'])}], "
            f"{p_text(row['p_adjusted'])}: {verdict}")
    return lines
