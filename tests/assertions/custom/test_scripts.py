"""`python`: inline expressions, file functions, batch functions; promptfoo's result normalisation."""

from __future__ import annotations

import pytest
from fixtures.suites import parse_problems, results, run

from checkllm_batch.assertions.custom.scripts import ScriptError, normalise

# (returned value, threshold, expected pass, expected score, reason fragment or None),
# as promptfoo 0.123.1 answers (tests/promptfoo_kit/unit-python.jsonl)
NORMALISE = [
    (True, None, True, 1.0, None),
    (False, None, False, 0.0, None),
    ("true", None, True, 1.0, None),
    ("FALSE", None, False, 0.0, None),
    (0.7, None, True, 0.7, None),
    (0, None, False, 0.0, None),
    (-1, None, False, -1.0, None),  # promptfoo keeps the raw number as score
    ("-1", None, False, -1.0, None),
    (0.4, 0.5, False, 0.4, None),
    (0.5, 0.5, True, 0.5, None),  # >= threshold, no epsilon
    ("0.5abc", None, True, 0.5, None),  # JavaScript parseFloat
    (" .25", None, True, 0.25, None),
    ("-Infinity", None, False, float("-inf"), None),
    ({"pass": True, "score": 0.3, "reason": "ok"}, 0.5, False, 0.3, "less than threshold"),
    ({"pass": True, "score": 0.3, "reason": "ok"}, None, True, 0.3, "ok"),
    ('{"pass": true, "score": 0.3, "reason": "r"}', 0.5, False, 0.3, "less than threshold"),
    ({"pass_": False, "score": 0, "reason": "snake"}, None, False, 0.0, "snake"),
    ({"pass": False, "pass_": True, "score": 1, "reason": "both"}, None, False, 1.0, "both"),
    ({"pass": True, "score": 0, "reason": ""}, None, True, 0.0, None),
]


@pytest.mark.parametrize("value,threshold,passed,score,reason", NORMALISE)
def test_normalise(value, threshold, passed, score, reason):
    got = normalise(value, threshold)
    assert got[0] is passed
    assert got[1] == pytest.approx(score, abs=1e-6)
    if reason:
        assert reason in got[2]


# results promptfoo cannot use: the row fails whatever the negation
UNUSABLE = [
    "abc", "", " true", "True ", ' {"pass": true, "score": 1, "reason": "r"}', "{not json",
    "[1]", "null", None, [1], {}, {"pass": True}, {"pass": True, "score": 0.5},
    {"score": 0.0, "reason": "r"}, {"pass": 1, "score": 1, "reason": "r"},
    {"pass": True, "score": "1", "reason": "r"}, {"pass": True, "score": 1, "reason": 5},
    {"pass": True, "score": 1, "reason": "r", "namedScores": 3},
    {"pass": True, "score": 1, "reason": "r", "componentResults": {}},
    {"pass": True, "score": 1, "reason": "r", "comment": 7},
    float("nan"), float("inf"), {1, 2},
]


@pytest.mark.parametrize("value", UNUSABLE)
def test_unusable_results_raise(value):
    with pytest.raises(ScriptError):
        normalise(value, None)


# (code, output, vars, status, score)
INLINE = [
    ("'Paris' in output", "The capital is Paris", {}, "pass", 1.0),
    ("'Paris' in output", "", {}, "fail", 0.0),
    ("'Paris' in output", "Ünïcödé Paris ✓", {}, "pass", 1.0),
    ("len(output) / 10", "abcde", {}, "pass", 0.5),
    ("context['vars']['city'] in output", "Berlin!", {"city": "Berlin"}, "pass", 1.0),
    ("context['vars']['city'] in output", "Berlin!", {"city": "Rome"}, "fail", 0.0),
    ("x = len(output)\nreturn x > 3", "abcd", {}, "pass", 1.0),
    ("x = len(output)\nreturn x > 3", "abc", {}, "fail", 0.0),
    ("{'pass': True, 'score': 0.25, 'reason': 'quarter'}", "x", {}, "pass", 0.25),
    ("'{{city}}' in output", "in Oslo", {"city": "Oslo"}, "pass", 1.0),  # value rendered per row
    ("json.loads(output)['a'] == 1", '{"a": 1}', {}, "pass", 1.0),  # promptfoo imports json
    ("if 'a' in output:\n\treturn 0.9\nreturn 0.1", "abc", {}, "pass", 0.9),  # tab indents
    ("\nreturn True\n", "x", {}, "pass", 1.0),
    ("True\n", "x", {}, "fail", 0.0),  # a newline makes a body, without `return`: None
    ("context['test']['vars']['city']", "x", {"city": "Oslo"}, "fail", 0.0),  # not a number
    ("context['test']['vars']['city'] == 'Oslo'", "x", {"city": "Oslo"}, "pass", 1.0),
]


@pytest.mark.parametrize("code,output,vars,status,score", INLINE)
def test_inline(tmp_path, code, output, vars, status, score):
    [r] = results(tmp_path, {"type": "python", "value": code}, [{"output": output}], vars)
    assert (r["status"], r["score"]) == (status, pytest.approx(score, abs=1e-6))


# context['vars'] is promptfoo's processed vars: one trailing newline cut from each string
# var, `{{other}}` references resolved, numbers as the JavaScript doubles that cross into
# Python as JSON. context['test']['vars'] stays as written. Verdicts: promptfoo 0.123.1,
# /tmp/qa/semantics/repro1/pf_out.json (QA finding 1; the dataset-column row is t_rows g10r0);
# the same cases with the recorded answers are in tests/promptfoo_kit/python-vars.jsonl.
# (code, suite vars, dataset columns, promptfoo's status and score)
PROCESSED_VARS = [
    ("context['vars']['s'] == 'a'", {"s": "a\n"}, {}, "pass", 1.0),
    ("str(context['vars']['n']) == '3'", {"n": 3.0}, {}, "pass", 1.0),
    ("context['vars']['t'] == 'hi ' + 'abc'", {"t": "hi {{w}}", "w": "abc"}, {}, "pass", 1.0),
    ("context['vars']['n'] == 12345678901234568", {"n": 12345678901234567}, {}, "pass", 1.0),
    ("context['vars']['s'] == 'a'", {}, {"s": "a\n"}, "pass", 1.0),
    ("context['vars']['s'] == ''", {"s": ""}, {}, "pass", 1.0),
    ("context['vars']['s'] is None", {"s": None}, {}, "pass", 1.0),
    ("context['vars']['s'] == 'Ünïcödé'", {"s": "Ünïcödé\n"}, {}, "pass", 1.0),
    ("context['test']['vars']['s'] == 'a' + chr(10)", {"s": "a\n"}, {}, "pass", 1.0),
]


@pytest.mark.parametrize("code,vars,columns,status,score", PROCESSED_VARS)
def test_context_vars_are_processed_as_promptfoo_does(tmp_path, code, vars, columns, status,
                                                       score):
    rows = [{"output": "x", **columns}]
    [r] = results(tmp_path, {"type": "python", "value": code}, rows, vars)
    assert (r["status"], r["score"]) == (status, pytest.approx(score, abs=1e-6)), r


def test_null_output_reaches_the_code_and_an_exception_fails_that_row(tmp_path):
    rows = [{"output": None}, {"output": "Paris"}]
    got = results(tmp_path, {"type": "python", "value": "'Paris' in output"}, rows)
    assert got[0]["status"] == "fail" and "Python code execution failed: TypeError" in got[0]["reason"]
    assert got[1]["status"] == "pass"


def test_json_output_is_passed_parsed(tmp_path):
    got = results(tmp_path, {"type": "python", "value": "output['a'] == 1"},
                  [{"output": {"a": 1}}, {"output": {"a": 2}}])
    assert [r["status"] for r in got] == ["pass", "fail"]


def test_negation_flips_pass_and_score(tmp_path):
    got = results(tmp_path, {"type": "not-python", "value": "'x' in output"},
                  [{"output": "x"}, {"output": "y"}])
    assert [(r["status"], r["score"]) for r in got] == [("fail", 0.0), ("pass", 1.0)]


def test_negation_keeps_a_broken_check_failing(tmp_path):
    """promptfoo: "Python code execution failed" is not inverted by `not-`."""
    got = results(tmp_path, {"type": "not-python", "value": "1 / len(output)"},
                  [{"output": ""}, {"output": "abcd"}])
    assert [(r["status"], r["score"]) for r in got] == [("fail", 0.0), ("fail", 0.75)]
    assert "ZeroDivisionError" in got[0]["reason"]


CHECKS = '''
import polars as pl
from checkllm_batch import batch_check

def get_assert(output, context):
    return {"pass": "Paris" in output, "score": 0.5, "reason": "looked for Paris"}

def boom(output, context):
    raise RuntimeError("kaput")

@batch_check
def short(df):
    return df["output"].str.len_chars() < 5

@batch_check
def ratio(df):
    return df["output"].str.len_chars() / 10

@batch_check
def by_var(df):
    return df["output"].str.contains(df["city"].str.to_uppercase())

@batch_check
def dicts(df):
    return [{"pass": len(o) > 2, "score": 0.9, "reason": "r" + o} for o in df["output"]]

@batch_check
def with_nulls(df):
    return pl.Series([True, None, False])[: df.height]

@batch_check
def wrong_length(df):
    return [True]

@batch_check
def raises(df):
    raise ValueError("bad batch")

def attr(df):
    return [o == "a" for o in df["output"]]
attr.batch = True

async def later(output, context):
    return 0.25

class Checks:
    @staticmethod
    def check(output, context):
        return "a" in output

@batch_check
def not_numbers(df):
    return pl.Series([float("nan"), 0.5, float("inf")])[: df.height]

calls = []
def counted(output, context):
    calls.append(output)
    return True
'''

ROWS = [{"output": "a"}, {"output": "abcdef"}, {"output": "PARIS"}]
# (function, threshold, expected statuses, expected scores, reason fragment of row 0)
FILE_CASES = [
    ("", None, ["fail", "fail", "fail"], [0.5, 0.5, 0.5], "looked for Paris"),
    (":boom", None, ["fail"] * 3, [0.0] * 3, "Python code execution failed: RuntimeError: kaput"),
    (":short", None, ["pass", "fail", "fail"], [1.0, 0.0, 0.0], None),
    (":ratio", 0.5, ["fail", "pass", "pass"], [0.1, 0.6, 0.5], None),
    (":ratio", None, ["pass", "pass", "pass"], [0.1, 0.6, 0.5], None),
    (":by_var", None, ["fail", "fail", "pass"], [0.0, 0.0, 1.0], None),
    (":dicts", None, ["fail", "pass", "pass"], [0.9, 0.9, 0.9], "ra"),
    (":with_nulls", None, ["pass", "error", "fail"], [1.0, None, 0.0], None),
    (":wrong_length", None, ["fail"] * 3, [0.0] * 3, "returned 1 results for 3 rows"),
    (":raises", None, ["fail"] * 3, [0.0] * 3, "ValueError: bad batch"),
    (":attr", None, ["pass", "fail", "fail"], [1.0, 0.0, 0.0], None),
    (":later", None, ["pass"] * 3, [0.25] * 3, None),  # async: run to its result
    (":Checks.check", None, ["pass", "pass", "fail"], [1.0, 1.0, 0.0], None),
    (":not_numbers", None, ["fail", "pass", "fail"], [0.0, 0.5, 0.0], None),
]


@pytest.mark.parametrize("fn,threshold,statuses,scores,reason", FILE_CASES)
def test_file_functions(tmp_path, fn, threshold, statuses, scores, reason):
    (tmp_path / "checks.py").write_text(CHECKS)
    a = {"type": "python", "value": f"file://checks.py{fn}"}
    if threshold is not None:
        a["threshold"] = threshold
    got = results(tmp_path, a, ROWS, {"city": "paris"})
    assert [r["status"] for r in got] == statuses
    assert [r["score"] for r in got] == [pytest.approx(s, abs=1e-6) if s is not None else None
                                        for s in scores]
    if reason:
        assert reason in got[0]["reason"]


def test_row_function_runs_once_per_distinct_case(tmp_path):
    (tmp_path / "checks.py").write_text(CHECKS)
    rows = [{"output": "same"}] * 50 + [{"output": "other"}] * 50
    run(tmp_path, [{"type": "python", "value": "file://checks.py:counted"}], rows)
    from checkllm_batch.assertions.custom.scripts import _MODULES
    module = [m for m in _MODULES.values() if hasattr(m, "counted")][-1]
    assert sorted(module.calls) == ["other", "same"]


# (value, message fragment): checked before any row is read
PARSE_ERRORS = [
    ("'a' in", "invalid Python"),
    ("file://missing.py", "file not found"),
    ("file://checks.py:nope", "no function 'nope'"),
    ("file://checks.txt", "must end in .py"),
    ("", "value must be Python code"),
]


@pytest.mark.parametrize("value,message", PARSE_ERRORS)
def test_parse_time_errors(tmp_path, value, message):
    (tmp_path / "checks.py").write_text(CHECKS)
    suite = {"tests": [{"assert": [{"type": "python", "value": value}]}]}
    assert message in parse_problems(tmp_path, suite)


def test_javascript_is_a_parse_error_pointing_to_python_and_expression(tmp_path):
    suite = {"tests": [{"assert": [{"type": "javascript", "value": "output.length > 3"}]}]}
    problems = parse_problems(tmp_path, suite)
    assert "javascript" in problems and "`python`" in problems and "`expression`" in problems


def test_named_scores_of_a_grading_result_feed_named_metrics(tmp_path):
    """promptfoo's named scores: each entry k of a script's `namedScores` adds score_k·w and w to
    metric k (not to the assertion's own metric); across cases they are summed."""
    import polars as pl

    import checkllm_batch as cb

    (tmp_path / "checks.py").write_text(
        "def grade(output, context):\n"
        "    n = len(output)\n"
        "    return {'pass': n > 3, 'score': 1.0, 'reason': 'len',\n"
        "            'namedScores': {'length': n / 10, 'own': 0.5, 'bad': 'x'}}\n",
        encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text("assert:\n"
                     "  - type: python\n    value: file://checks.py:grade\n"
                     "    metric: own\n    weight: 2\n", encoding="utf-8")
    run = cb.evaluate(suite, pl.DataFrame({"output": ["abcd", "ab", "abcdef"]}))
    metrics = {r["metric"]: r for r in run.named_metrics.to_dicts()}
    assert metrics["length"]["sum"] == pytest.approx((0.4 + 0.2 + 0.6) * 2)
    assert metrics["length"]["weight"] == pytest.approx(6) and metrics["length"]["count"] == 3
    assert metrics["own"]["sum"] == pytest.approx(1.0 * 2 * 3)  # its own score, not 0.5
    assert "bad" not in metrics
    stored = run.assertion_results.sort("case_id")["named_scores"].to_list()
    assert stored[1] == [{"metric": "length", "score": 0.2}, {"metric": "own", "score": 0.5}]
