"""How the `python` type (custom/__init__.py) runs user code: an inline Python expression, or
a function from `file://checks.py:fn`.

A function marked with `@batch_check` receives the whole batch as a Polars DataFrame
(`output`, `prompt`, `provider`, `tool_calls`, `vars` as a struct and each var as a column)
and returns one result per row: the vectorised path. Any other function is called once per
distinct case (output, vars, prompt, provider), the flagged row-wise fallback, with
promptfoo's `(output, context)`. Results are normalised as promptfoo 0.123.1 does
(its assertions/python.ts: a bool, a number, a GradingResult mapping; see `normalise`).
An exception in user code, or a result that is none of promptfoo's, fails that row's
assertion with the message, `not-` included (promptfoo's "Python code execution failed");
it never stops a run.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import polars as pl

from ...js.jsvalue import through_json
from ..batch import caseframe
from ..batch.distinct import per_distinct
from ..batch.values import RowValues
from ..compiled import NAMED_SCORES, Ctx

if TYPE_CHECKING:
    from polars._typing import PolarsDataType

# broken: no verdict (an exception, an unusable result): fails whatever the negation
RESULT: dict[str, PolarsDataType] = {"ok": pl.Boolean, "score": pl.Float64, "detail": pl.String,
                                     "named": NAMED_SCORES, "broken": pl.Boolean}
Result = tuple[bool | None, float | None, str | None, list[dict] | None]  # named: namedScores
_FLOAT = re.compile(r"^\s*([+-]?(?:Infinity|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?))")
_INDENT = re.compile(r"^(?!\s*$)\s+", re.MULTILINE)  # the first indented line's indent
_MUST_RETURN = "Python check must return a bool, a number or a {pass, score, reason} dict"
_SNAKE = {"pass_": "pass", "named_scores": "namedScores", "component_results": "componentResults",
          "tokens_used": "tokensUsed"}
# promptfoo's isGradingResult: what each key must be when present (pass, score, reason: always)
_OPTIONAL = {"namedScores": (dict, list, type(None)), "namedScoreWeights": (dict, list, type(None)),
             "tokensUsed": (dict, list, type(None)), "componentResults": (list,),
             "assertion": (dict, type(None)), "comment": (str,)}


class ScriptError(ValueError):
    """A script result promptfoo cannot use: the row fails, `not-` included."""


def batch_check(fn: Callable) -> Callable:
    """Mark a `python` check function as taking the whole batch (a Polars DataFrame)."""
    fn.__checkllm_batch__ = True  # type: ignore[attr-defined]
    return fn


def is_batch(fn: Callable) -> bool:
    return bool(getattr(fn, "__checkllm_batch__", False) or getattr(fn, "batch", False) is True)


@dataclass(frozen=True)
class Script:
    fn: Callable
    batch: bool
    source: str  # for messages: "inline" or the file:function


def load_script(value: Any, spec: Any = None) -> Script:
    """Compile inline code or import `file://path.py[:fn]` (path made absolute by the parser)."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("value must be Python code or file://checks.py[:function]")
    if value.startswith("file://"):
        return _from_file(value[len("file://"):])
    if "\n" in value:  # a function body, each line indented like its first indented line
        indent = m.group(0) if (m := _INDENT.search(value)) else "    "
        body = "".join(f"{indent}{line}\n" for line in value.split("\n"))
    else:
        body = f"    return {value}\n"
    namespace: dict[str, Any] = {"json": json}  # promptfoo's wrapper imports json
    try:
        exec(compile(  # noqa: S102  (the user's own check, from their suite)
            "def main(output, context):\n" + body, "<python assertion>", "exec"), namespace)
    except SyntaxError as e:
        raise ValueError(f"invalid Python: {e.msg} (line {(e.lineno or 2) - 1})") from None
    return Script(namespace["main"], False, "inline")


_MODULES: dict[tuple[str, float], Any] = {}


def _from_file(ref: str) -> Script:
    path, _, name = ref.partition(":")
    file = Path(path)
    if file.suffix != ".py":
        raise ValueError(f"file://{ref}: a python check file must end in .py")
    if not file.is_file():
        raise ValueError(f"file://{ref}: file not found")
    key = (str(file.resolve()), file.stat().st_mtime)
    if key not in _MODULES:
        module_spec = importlib.util.spec_from_file_location(f"_checkllm_user_{len(_MODULES)}", file)
        module = importlib.util.module_from_spec(module_spec)  # type: ignore[arg-type]
        try:
            module_spec.loader.exec_module(module)  # type: ignore[union-attr]
        except Exception as e:  # noqa: BLE001  (user code: report where, at parse time)
            raise ValueError(f"file://{ref}: cannot import: {type(e).__name__}: {e}") from None
        _MODULES[key] = module
    fn: Any = _MODULES[key]
    for part in (name or "get_assert").split(".", 1):  # promptfoo: `Class.method` too
        fn = getattr(fn, part, None)
    if not callable(fn):
        raise ValueError(f"file://{ref}: no function {name or 'get_assert'!r} in {file.name}")
    return Script(fn, is_batch(fn), f"{file.name}:{name or fn.__name__}")


def normalise(result: Any, threshold: float | None) -> Result:
    """promptfoo's script result normalisation (assertions/python.ts): (passed, score,
    reason, named).
    Raises ScriptError for a result promptfoo fails on."""
    try:
        json.dumps(result, allow_nan=False)  # promptfoo reads the result as JSON
    except (TypeError, ValueError) as e:
        raise ScriptError(f"the result is not JSON: {e}") from None
    if isinstance(result, bool):
        return result, float(result), None, None
    if isinstance(result, str):
        if result.lower() in ("true", "false"):  # as is: " true" is no boolean
            return result.lower() == "true", float(result.lower() == "true"), None, None
        if result.startswith("{"):
            try:
                return _grading(orjson.loads(result), threshold)
            except orjson.JSONDecodeError as e:
                raise ScriptError(f"invalid GradingResult JSON: {e}") from None
        m = _FLOAT.match(result)  # JavaScript's parseFloat
        if m is None:
            raise ScriptError(f"{_MUST_RETURN}, got the text {result[:80]!r}")
        result = float(m.group(1).replace("Infinity", "inf"))
    if isinstance(result, dict):
        return _grading(result, threshold)
    if isinstance(result, (int, float)):
        score = float(result)
        return (score > 0 if threshold is None else score >= threshold), score, None, None
    raise ScriptError(f"{_MUST_RETURN}, got {type(result).__name__}")


def _grading(result: dict, threshold: float | None) -> Result:
    """A GradingResult as promptfoo checks it: `pass` a bool, `score` a number, `reason` a
    string (snake_case keys accepted); the threshold fails a lower score."""
    result = {**{camel: result[snake] for snake, camel in _SNAKE.items()
                 if snake in result and camel not in result}, **result}
    passed, score, reason = result.get("pass"), result.get("score"), result.get("reason")
    if not (isinstance(passed, bool) and isinstance(score, (int, float))
            and not isinstance(score, bool) and isinstance(reason, str)
            and all(isinstance(result[k], kinds) for k, kinds in _OPTIONAL.items() if k in result)):
        raise ScriptError(f"{_MUST_RETURN}, got {orjson.dumps(result, default=str).decode()[:200]}")
    named = _named_scores(result.get("namedScores"))
    if threshold is not None and score < threshold:
        return False, float(score), f"Python score {score:g} is less than threshold {threshold:g}" \
            + (f": {reason}" if reason else ""), named
    return passed, float(score), reason or None, named


def _named_scores(value: Any) -> list[dict] | None:
    """A GradingResult's `namedScores` ({metric: number}) as NAMED_SCORES entries; entries
    that are not numbers are dropped."""
    if not isinstance(value, dict):
        return None
    return [{"metric": str(k), "score": float(v)} for k, v in value.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)] or None


def _call_rows(script: Script, threshold: float | None, config: Any, rows: list[dict]) -> dict:
    out: dict[str, list] = {name: [] for name in RESULT}
    for row in rows:  # row-wise: user Python code, once per distinct case
        try:
            # promptfoo hands Python its arguments as JSON: numbers arrive as JavaScript's
            value, context = through_json([
                caseframe.output_value(row.get("output"), row.get("output_kind")),
                caseframe.context(row, config)])
            returned = script.fn(value, context)
            if inspect.iscoroutine(returned):  # an async check, as promptfoo runs it
                import asyncio  # here, not at the top: only an async check needs it

                returned = asyncio.run(returned)
            result = (*normalise(returned, threshold), False)
        except Exception as e:  # noqa: BLE001  (user code: fail this row with the message)
            result = _broken(e)
        for name, v in zip(out, result):
            out[name].append(v)
    return out


def _broken(e: Exception) -> tuple:
    """A row without a verdict: it fails with the message, `not-` included."""
    what = str(e) if isinstance(e, ScriptError) else f"{type(e).__name__}: {e}"
    return False, 0.0, f"Python code execution failed: {what}", None, True


def _call_rendered(scripts: RowValues, threshold: float | None, config: Any, rows: list[dict]
                   ) -> dict:
    """Each row with the script its own vars rendered (a batch function needs one script)."""
    out: dict[str, list] = {name: [] for name in RESULT}
    for row in rows:  # row-wise: user Python code, once per distinct case
        script, error = scripts.prepared(row[caseframe.SCRIPT])
        if script is not None and script.batch:
            script, error = None, "a batch check cannot be a template"
        result: dict[str, list] = (
            _call_rows(script, threshold, config, [row]) if script is not None
            else {"ok": [None], "score": [None], "detail": [error], "named": [None],
                  "broken": [None]})
        for name, values in result.items():
            out[name] += values
    return out


def _call_batch(script: Script, threshold: float | None, rows: pl.Series) -> pl.Series:
    frame = caseframe.case_frame(rows)
    try:
        returned = script.fn(frame)
        series = returned if isinstance(returned, pl.Series) else pl.Series(list(returned))
        if series.len() != frame.height:
            raise ValueError(f"returned {series.len()} results for {frame.height} rows")
    except Exception as e:  # noqa: BLE001  (user code: fail every row of the batch)
        return pl.DataFrame({"ok": [False] * frame.height, "score": [0.0] * frame.height,
                             "detail": [f"{script.source} failed: {type(e).__name__}: {e}"]
                             * frame.height, "named": [None] * frame.height,
                             "broken": [True] * frame.height},
                            schema=RESULT).to_struct()
    return batch_result(series, threshold).to_struct()


def batch_result(series: pl.Series, threshold: float | None) -> pl.DataFrame:
    """A column of results as (ok, score, detail): vectorised for bools and numbers."""
    null = pl.lit("the check returned null for this row")
    if series.dtype == pl.Boolean:
        frame = pl.DataFrame({"r": series}).select(
            ok=pl.col("r"), score=pl.col("r").cast(pl.Float64),
            detail=pl.when(pl.col("r").is_null()).then(null), named=pl.lit(None, NAMED_SCORES),
            broken=pl.lit(False))
    elif series.dtype.is_numeric():
        r = pl.col("r").cast(pl.Float64)
        ok = r > 0 if threshold is None else r >= threshold
        frame = pl.DataFrame({"r": series}).select(
            ok=pl.when(r.is_nan()).then(False).otherwise(ok), score=r.fill_nan(0.0),
            detail=pl.when(r.is_null()).then(null), named=pl.lit(None, NAMED_SCORES),
            broken=(r.is_nan() | r.is_infinite()).fill_null(False))  # promptfoo: no JSON
    else:  # dicts / strings: promptfoo's normalisation, once per distinct value
        def normalised(uniq: pl.Series) -> pl.DataFrame:
            values = [_settled(v, threshold)
                      for v in uniq.to_list()]  # per-distinct: user results, read in Python
            return pl.DataFrame(values, schema=RESULT, orient="row")
        frame = (per_distinct(series, normalised) if series.dtype != pl.Object
                 else normalised(series))
    return frame.select(pl.col("ok").cast(pl.Boolean), pl.col("score").cast(pl.Float64),
                        pl.col("detail").cast(pl.String), pl.col("named").cast(NAMED_SCORES),
                        pl.col("broken").cast(pl.Boolean))


def _settled(value: Any, threshold: float | None) -> tuple:
    """One batch result as a RESULT row: null is an error; a struct's null fields are absent."""
    if value is None:
        return None, None, "the check returned null for this row", None, False
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if v is not None}
    try:
        return (*normalise(value, threshold), False)
    except ScriptError as e:
        return _broken(e)


def script_runner(ctx: Ctx, config: Any) -> Callable[[pl.Series], pl.Series]:
    """The `python` type's batch function: each batch's case structs -> RESULT structs."""
    script: Script = ctx.fixed

    def run(rows: pl.Series) -> pl.Series:
        values = ctx.row
        if values is not None:  # a templated script: each distinct rendering compiled once
            return caseframe.over_keys(
                rows, lambda uniq: _call_rendered(values, ctx.threshold, config, uniq), RESULT)
        if script.batch:
            return _call_batch(script, ctx.threshold, rows)
        return caseframe.over_keys(
            rows, lambda uniq: _call_rows(script, ctx.threshold, config, uniq), RESULT)

    return run
