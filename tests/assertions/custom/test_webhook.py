"""`webhook` against a local HTTP server on 127.0.0.1: request shape, verdicts, retries, errors."""

from __future__ import annotations

import json

import pytest
from fixtures.suites import parse_problems, results
from fixtures.webhook import Server


@pytest.fixture
def server():
    s = Server()
    yield s
    s.httpd.shutdown()


# (output, status, score, reason fragment)
CASES = [
    ("good", "pass", 0.9, "fine"),
    ("bad", "fail", 0.0, "nope"),
    ("", "pass", 1.0, None),
    ("Ünïcödé ✓", "pass", 1.0, None),
    ("http404", "error", None, "Webhook error: HTTP 404"),
    ("notjson", "error", None, "Webhook error"),
    ("nopass", "error", None, "no boolean `pass`"),
    ("vars", "pass", 1.0, None),
]


@pytest.mark.parametrize("output,status,score,reason", CASES)
def test_verdicts(tmp_path, server, output, status, score, reason):
    [r] = results(tmp_path, {"type": "webhook", "value": server.url}, [{"output": output}],
                  {"city": "Paris"})
    assert r["status"] == status
    assert r["score"] == (None if score is None else pytest.approx(score, abs=1e-6))
    if reason:
        assert reason in r["reason"]


def test_request_shape_and_one_request_per_distinct_case(tmp_path, server):
    rows = [{"output": "good"}] * 20 + [{"output": {"a": 1}}] * 5
    got = results(tmp_path, {"type": "webhook", "value": server.url}, rows[:20], {"city": "X"})
    assert {r["status"] for r in got} == {"pass"}
    assert len(server.requests) == 1
    assert server.requests[0] == {"output": "good", "context": {"prompt": None,
                                                               "vars": {"city": "X"}}}


def test_vars_are_sent_as_promptfoo_sends_them(tmp_path, server):
    """promptfoo 0.123.1 posts the vars it processed for grading, as JavaScript's JSON: one
    trailing newline cut from each string var, `{{other}}` resolved, numbers as JavaScript
    doubles (a body recorded from its webhook with the offline kit)."""
    vars = {"s": "a\n", "n": 3.0, "t": "hi {{w}}", "w": "abc", "big": 12345678901234567,
            "o": {"k": "x\n", "f": 2.0}, "u": "Ünïcödé ✓", "e": ""}
    results(tmp_path, {"type": "webhook", "value": server.url}, [{"output": "x"}], vars)
    sent = json.dumps(server.requests[0]["context"]["vars"], ensure_ascii=False, sort_keys=True)
    assert sent == ('{"big": 12345678901234568, "e": "", "n": 3, "o": {"f": 2, "k": "x\\n"}, '
                    '"s": "a", "t": "hi abc", "u": "Ünïcödé ✓", "w": "abc"}')


def test_json_output_is_sent_as_json(tmp_path, server):
    [r] = results(tmp_path, {"type": "webhook", "value": server.url}, [{"output": {"a": 1}}])
    assert r["status"] == "pass" and server.requests[0]["output"] == {"a": 1}


def test_retries_then_succeeds(tmp_path, server):
    server.failures_left["flaky"] = 2
    [r] = results(tmp_path, {"type": "webhook", "value": server.url, "config": {"retries": 2}},
                  [{"output": "flaky"}])
    assert r["status"] == "pass" and len(server.requests) == 3


def test_retries_exhausted_is_an_error_not_a_fail(tmp_path, server):
    server.failures_left["flaky"] = 5
    [r] = results(tmp_path, {"type": "webhook", "value": server.url, "config": {"retries": 1}},
                  [{"output": "flaky"}])
    assert (r["status"], r["score"]) == ("error", None) and "HTTP 503" in r["reason"]
    assert len(server.requests) == 2


def test_concurrency_is_bounded(tmp_path, server):
    rows = [{"output": f"slow{i}"} for i in range(12)]
    got = results(tmp_path, {"type": "webhook", "value": server.url,
                             "config": {"concurrency": 3}}, rows)
    assert {r["status"] for r in got} == {"pass"}
    assert len(server.requests) == 12 and 1 <= server.peak <= 3


def test_negation_flips_score(tmp_path, server):
    [r] = results(tmp_path, {"type": "not-webhook", "value": server.url}, [{"output": "good"}])
    assert r["status"] == "fail" and r["score"] == pytest.approx(0.1)


@pytest.mark.parametrize("fields,message", [
    ({"value": "ftp://x"}, "http(s):// URL"),
    ({"value": "http://x", "config": {"concurrency": 0}}, "concurrency"),
    ({"value": "http://x", "config": {"retries": -1}}, "retries"),
])
def test_parse_time_errors(tmp_path, fields, message):
    suite = {"tests": [{"assert": [{"type": "webhook", **fields}]}]}
    assert message in parse_problems(tmp_path, suite)
