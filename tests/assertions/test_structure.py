"""XML, HTML, SQL, tool-call checks (promptfoo's assertions/ xml, html, sql, openai tools).

Verdicts marked [pf] were checked with promptfoo 0.123.1 run offline on the same inputs.
"""

import json
import os

import pytest
from fixtures.engine import run_assertion
from fixtures.tables.structure import F1, FUNCTIONS, HTML, SQL, TOOLS, WEATHER, XML, call


@pytest.mark.parametrize(("assertion", "output", "status"), XML + HTML + SQL)
def test_structure(tmp_path, assertion, output, status):
    got = run_assertion(tmp_path, assertion, [{"output": output}])[0]
    assert got["status"] == status, got
    assert got["score"] == (1.0 if status == "pass" else 0.0)


@pytest.mark.parametrize("kind", ["is-xml", "is-html", "contains-html", "is-sql"])
def test_null_output_fails(tmp_path, kind):
    assert run_assertion(tmp_path, {"type": kind}, [{"output": None}])[0]["status"] == "fail"


@pytest.mark.parametrize("value", ["SELECT 1", {"databaseType": "Oracle9"},
                                   {"allowedTables": "users"}])
def test_sql_bad_values_fail_at_parse_time(tmp_path, value):
    from checkllm_batch.errors import ConfigError

    with pytest.raises(ConfigError):
        run_assertion(tmp_path, {"type": "is-sql", "value": value}, [{"output": "x"}])


@pytest.mark.parametrize(("row", "status"), TOOLS)
def test_openai_tools_call(tmp_path, row, status):
    assertion = {"type": "is-valid-openai-tools-call", "config": {"tools": [WEATHER]}}
    assert run_assertion(tmp_path, assertion, [row])[0]["status"] == status


def test_tools_per_row_column_and_missing_tools(tmp_path):
    """No tools declared fails, as in promptfoo, and fails `not-` too (a configuration gap)."""
    rows = [{"output": json.dumps([call("get_weather", {"city": "Rome"})]),
             "tools": json.dumps([WEATHER])},
            {"output": json.dumps([call("get_weather", {"city": "Rome"})]), "tools": None}]
    got = run_assertion(tmp_path, {"type": "is-valid-openai-tools-call"}, rows)
    assert got[0]["status"] == "pass"
    assert got[1]["status"] == "fail" and "no tools declared" in got[1]["reason"]
    negated = run_assertion(tmp_path, {"type": "not-is-valid-openai-tools-call"}, rows)
    assert [g["status"] for g in negated] == ["fail", "fail"]


@pytest.mark.parametrize(("output", "status"), [
    ({"name": "get_weather", "arguments": '{"city": "Lima"}'}, "pass"),
    ({"function_call": {"name": "get_weather", "arguments": '{"city": "Lima"}'}}, "pass"),
    ({"name": "get_weather", "arguments": '{"city": 3}'}, "fail"),
    ({"name": "other", "arguments": "{}"}, "fail"),
    ("not a call", "fail"),
])
def test_openai_function_call(tmp_path, output, status):
    assertion = {"type": "is-valid-openai-function-call", "value": FUNCTIONS}
    text = output if isinstance(output, str) else json.dumps(output)
    assert run_assertion(tmp_path, assertion, [{"output": text}])[0]["status"] == status


@pytest.mark.parametrize(("calls", "value", "f1"), F1)
def test_tool_call_f1(tmp_path, calls, value, f1):
    out = calls if isinstance(calls, str) else json.dumps(calls)
    got = run_assertion(tmp_path, {"type": "tool-call-f1", "value": value}, [{"output": out}])[0]
    assert got["score"] == pytest.approx(f1, abs=1e-6)
    assert got["status"] == ("pass" if f1 >= 1.0 else "fail")
    neg = run_assertion(tmp_path, {"type": "not-tool-call-f1", "value": value},
                        [{"output": out}])[0]
    assert neg["status"] == ("fail" if f1 >= 1.0 else "pass")


def test_pool_gives_the_same_outcomes_as_in_process():
    from checkllm_batch.assertions.batch.pool import check_values
    from checkllm_batch.assertions.parsers.markup import xml_check

    values = [f"<a><b>{i}</b></a>" if i % 3 else f"<a>{i}" for i in range(40)]
    assert check_values(xml_check, (), values, parallel=True) == \
        check_values(xml_check, (), values, parallel=False)


def _dies_in_a_worker(value, parent_pid):
    if os.getpid() != parent_pid:
        os._exit(1)  # a worker killed mid-batch (say, by the OOM killer)
    return True, value


def test_a_killed_worker_loses_no_value_and_the_pool_is_dropped():
    from checkllm_batch.assertions.batch import pool

    values = [str(i) for i in range(5_000)]
    assert pool.check_values(_dies_in_a_worker, os.getpid(), values, parallel=True) == \
        [(True, v) for v in values]
    assert pool._POOL is None


def test_pool_workers_do_not_rerun_an_unguarded_script(tmp_path):
    """A user script without `if __name__ == "__main__"` must run once, not once per worker."""
    import subprocess
    import sys

    script = tmp_path / "user_script.py"
    script.write_text(
        "from checkllm_batch.assertions.batch.pool import check_values\n"
        "from checkllm_batch.assertions.parsers.markup import xml_check\n"
        "print('script body ran', flush=True)\n"
        "values = ['<a>%d</a>' % i for i in range(20)]\n"
        "print(all(ok for ok, _ in check_values(xml_check, (), values, parallel=True)))\n",
        encoding="utf-8")
    env = {**__import__("os").environ, "CHECKLLM_WORKERS": "2"}
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, env=env, check=True).stdout
    assert out.count("script body ran") == 1 and out.strip().endswith("True")


def test_empty_tool_calls_column_falls_back_to_the_output(tmp_path):
    rows = [{"output": json.dumps([call("get_weather", {"city": "Bern"})]), "tool_calls": None},
            {"output": "no calls", "tool_calls": json.dumps([call("get_weather", {"city": "X"})])}]
    assertion = {"type": "is-valid-openai-tools-call", "config": {"tools": [WEATHER]}}
    assert [g["status"] for g in run_assertion(tmp_path, assertion, rows)] == ["pass", "pass"]
    f1 = run_assertion(tmp_path, {"type": "tool-call-f1", "value": "get_weather"}, rows)
    assert [g["score"] for g in f1] == [1.0, 1.0]


def test_parser_runs_once_per_distinct_value_per_batch(tmp_path, monkeypatch):
    from checkllm_batch.assertions import structure

    seen = []
    real = structure.xml_check

    def counting(text, required):
        seen.append(text)
        return real(text, required)

    monkeypatch.setattr(structure, "xml_check", counting)
    rows = [{"output": "<a/>"}, {"output": "<b>"}, {"output": "<a/>"}]
    got = run_assertion(tmp_path, {"type": "is-xml"}, rows)
    assert [g["status"] for g in got] == ["pass", "fail", "pass"]
    assert sorted(seen) == ["<a/>", "<b>"]


GEMINI_TOOLS = [{"functionDeclarations": [
    {"name": "get_weather",
     "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}},
                    "required": ["city"]}},
    {"name": "get_time"}]}]


@pytest.mark.parametrize(("output", "status", "reason"), [
    ([{"functionCall": {"name": "get_weather", "args": {"city": "Lima"}}}], "pass", None),
    ({"toolCall": {"functionCalls": [{"name": "get_weather", "args": '{"city": "Lima"}'}]}},
     "pass", None),
    ([{"text": "checking"}, {"functionCall": {"name": "get_time", "args": {}}}], "pass", None),
    ([{"functionCall": {"name": "get_weather", "args": {"city": 3}}}], "fail",
     'Call to "get_weather" does not match schema'),  # STRING is lowered to string
    ([{"functionCall": {"name": "get_weather", "args": {}}}], "fail",
     'Call to "get_weather" does not match schema'),  # no args, but parameters declared
    ([{"functionCall": {"name": "get_time", "args": {"tz": "UTC"}}}], "fail",
     'Call to "get_time" does not match schema'),  # args, but no parameters declared
    ([{"functionCall": {"name": "book", "args": {}}}], "fail",
     'Called "book", but there is no function with that name'),
    ([{"text": "no call"}], "fail", "Google did not return a valid-looking function call"),
    ("It is sunny.", "fail", "Google did not return a valid-looking function call"),
])
def test_google_function_call(tmp_path, output, status, reason):
    """promptfoo validates Google function calls when the provider is Google's; here the
    declared tools' shape (`functionDeclarations`) decides. Both type names work."""
    text = output if isinstance(output, str) else json.dumps(output)
    for name in ("is-valid-function-call", "is-valid-openai-function-call"):
        got = run_assertion(tmp_path, {"type": name, "config": {"tools": GEMINI_TOOLS}},
                            [{"output": text}])[0]
        assert got["status"] == status
        assert reason is None or reason in got["reason"]


def test_declared_tools_load_from_a_file(tmp_path):
    (tmp_path / "tools.yaml").write_text(json.dumps([WEATHER]), encoding="utf-8")
    assertion = {"type": "is-valid-openai-tools-call", "config": {"tools": "file://tools.yaml"}}
    rows = [{"output": json.dumps([call("get_weather", {"city": "Bern"})])},
            {"output": json.dumps([call("get_weather", {})])}]
    assert [g["status"] for g in run_assertion(tmp_path, assertion, rows)] == ["pass", "fail"]


def test_mcp_error_reason_names_the_tool(tmp_path):
    got = run_assertion(tmp_path, {"type": "is-valid-openai-tools-call", "config": {"tools": [WEATHER]}},
                        [{"output": "MCP Tool Error (weather): upstream timeout"}])[0]
    assert got["reason"].endswith("MCP tool call failed for weather: upstream timeout")


# is-html verdicts and reasons of promptfoo 0.123.1 (parse5), run offline on each output:
# the HTML5 tree decides (implied closing, foster parenting, text in an implied body).
HTML5 = [
    ('<p>one<div>two</div>three', 'Output must be wrapped in HTML tags'),
    ('<table>text</table>', 'Output must be wrapped in HTML tags'),
    ('<title>x</title>hello', 'Output must be wrapped in HTML tags'),
    ('</p>', 'Output does not contain recognized HTML elements'),
    ('<p>hello', None),
    ('hi <b>x</b>', 'Output must be wrapped in HTML tags'),
    ('<div><p>ok</p></div>', None),
    ('plain text', 'Output must be wrapped in HTML tags'),
    ('<br>text', 'Output must be wrapped in HTML tags'),
    ('<!-- c -->text', 'Output must be wrapped in HTML tags'),
    ('&nbsp;', 'Output does not contain recognized HTML elements'),
    ('<foo>text</foo>', 'Output does not contain recognized HTML elements'),
    ('<my-widget>x</my-widget>', None),
    ('<html><body>hello</body></html>', None),
    ('<body>text</body>', None),
    ('<table><tr><td>x</td></tr></table>', None),
    ('<ul><li>a<li>b</ul>', None),
    ('<p>a</p>\n\n<p>b</p>', None),
    ('<head><title>t</title></head><p>x</p>', None),
    ("<?xml version='1.0'?><a/>", 'Output appears to be XML, not HTML'),
    ('<div>x</div> trailing', 'Output must be wrapped in HTML tags'),
    ('<span>a</span><span>b</span>', None),
    ('<p>Unclosed <b>bold', None),
    ("<a href='x'>link</a> and text", 'Output must be wrapped in HTML tags'),
    ('<html>hello</html>', 'Output must be wrapped in HTML tags'),
    ('<head></head>', None),
    ('<img src=x>', None),
    ('<select>text<option>a</option></select>', None),
    ('<p>x</p></div>tail', 'Output must be wrapped in HTML tags'),
    ('<b><p>mis</b>nested</p>', None),
    ('<textarea>raw <b></textarea>', None),
    ('<template><p>t</p></template>', None),
    ('<frameset></frameset>', 'Output does not contain recognized HTML elements'),
    ('<DIV>UPPER</DIV>', None),
    ('<div>a</div>\xa0', None),
    ('<math><mi>x</mi></math>', None),
    ("<script>var a = '<b>';</script>", None),
    ('<style>p{}</style>text', 'Output must be wrapped in HTML tags'),
    ('<table><td>x</td>text</table>', 'Output must be wrapped in HTML tags'),
    ('<li>item</li>', None),
    ('<p>x</p><p>', None),
]


@pytest.mark.parametrize(("output", "reason"), HTML5)
def test_is_html_follows_promptfoos_html5_verdicts(tmp_path, output, reason):
    got = run_assertion(tmp_path, {"type": "is-html"}, [{"output": output}])[0]
    assert got["status"] == ("pass" if reason is None else "fail")
    assert reason is None or reason in got["reason"]


def test_tools_come_from_the_cases_provider_in_the_suite(tmp_path):
    """A promptfoo suite declares tools in its providers' config; each case is checked
    against the tools of its own provider (matched by id or label)."""
    (tmp_path / "tools.json").write_text(json.dumps([WEATHER]), encoding="utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "providers:\n"
        "  - id: openai:gpt-4o\n"
        "    config: {tools: file://tools.json}\n"
        "  - id: openai:gpt-4o-mini\n"
        "    label: mini\n"
        "    config:\n"
        "      tools: [{type: function, function: {name: get_time, parameters: {}}}]\n"
        "  - echo\n"
        "assert:\n"
        "  - type: is-valid-openai-tools-call\n", encoding="utf-8")
    import polars as pl

    import checkllm_batch as cb

    weather = json.dumps([call("get_weather", {"city": "Bern"})])
    outputs = pl.DataFrame({"provider": ["openai:gpt-4o", "mini", "echo"],
                            "output": [weather, weather, weather]})
    got = cb.evaluate(suite, outputs).assertion_results.sort("case_id")
    assert got["status"].to_list() == ["pass", "fail", "fail"]
    assert 'no function with that name' in got["reason"][1]
    assert "no tools declared" in got["reason"][2]


def test_pool_workers_die_with_a_killed_parent(tmp_path):
    """SIGKILL gives the run no chance to stop its workers: they notice and exit."""
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "killed.py"
    script.write_text(
        "import os\n"
        "from checkllm_batch.assertions.batch import pool\n"
        "p = pool.start()\n"
        "p.submit(pool._noop).result()\n"
        "print(' '.join(str(w) for w in p._processes), flush=True)\n"
        "os.kill(os.getpid(), 9)\n", encoding="utf-8")
    env = {**os.environ, "CHECKLLM_WORKERS": "3"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == -signal.SIGKILL, done.stderr
    workers = [int(w) for w in done.stdout.split()]
    assert len(workers) == 2

    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True

    deadline = time.monotonic() + 30
    while any(alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(alive(w) for w in workers)
