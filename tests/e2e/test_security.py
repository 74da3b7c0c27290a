"""Security: a dry run reaches nothing outside the process, derived `sql:` is one scalar
expression, budgets are real numbers, and keys never reach results, whatever their length."""

from __future__ import annotations

import json

import duckdb
import polars as pl
import pytest
from click.testing import CliRunner
from fixtures.webhook import Server
from judge_server import JudgeServer

from checkllm_batch import api
from checkllm_batch.cli import main
from checkllm_batch.errors import ConfigError
from checkllm_batch.suites.derived import scalar_sql
from checkllm_batch.suites.judge import JudgeConfig


@pytest.fixture
def recorder():
    """The webhook tests' local server on 127.0.0.1: it keeps every request it receives."""
    server = Server()
    yield server
    server.httpd.shutdown()


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_dry_run_runs_no_webhook_and_no_python_check(tmp_path, recorder):
    marker = tmp_path / "ran.txt"
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"""
judge: {{model: gpt-4o-mini, base_url: "http://127.0.0.1:9", retries: 0}}
tests:
  - assert:
      - {{type: webhook, value: "{recorder.url}"}}
      - type: python
        value: "open({str(marker)!r}, 'w').write('ran') > 0"
      - {{type: llm-rubric, value: is polite}}
""")
    out = tmp_path / "out.jsonl"
    out.write_text('{"output": "secret customer data", "email": "a@b.c"}\n' * 3)
    result = invoke("eval", suite, "--outputs", out, "--db", tmp_path / "r.db", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "3 graded assertions, 1 unique requests" in result.output
    assert recorder.requests == []
    assert not marker.exists()
    # the same suite without --dry-run does call both (the test above can fail)
    invoke("eval", suite, "--outputs", out, "--db", tmp_path / "r.db")
    assert len(recorder.requests) == 1 and marker.read_text() == "ran"


SQL = [
    # (derived sql:, the error, or None when it is one scalar expression)
    ("1; DROP TABLE x", "must be one scalar expression over the metric columns (no statement"),
    ("DROP TABLE cases", "(no statement, no `;`)"),
    ("ATTACH 'other.db'", "(no statement, no `;`)"),
    ("tp) AS DOUBLE) FROM base; DROP TABLE cases; SELECT ((1", "(no statement, no `;`)"),
    ("(SELECT count(*) FROM cases)", "not a subquery"),
    ("tp + (SELECT 1 FROM read_csv('/etc/passwd'))", "not a subquery"),
    ("", "(no statement, no `;`)"),
    ("tp / nullif(tp + fp, 0)", None),
    ("CASE WHEN tp > 0 THEN 1 ELSE 0 END -- ünïcode comment", None),
]


@pytest.mark.parametrize("sql,error", SQL)
def test_derived_sql_must_be_one_scalar_expression(sql, error):
    if error is None:
        assert ";" not in scalar_sql(sql)
        return
    with pytest.raises(ValueError, match="sql: ") as e:
        scalar_sql(sql)
    assert error in str(e.value)


def test_derived_sql_statement_is_refused_before_anything_runs(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text("derivedMetrics:\n  - {name: x, sql: '1; CREATE TABLE pwned AS SELECT 1'}\n"
                     "tests:\n  - assert: [{type: contains, value: a, metric: tp}]\n")
    result = invoke("eval", suite, "--db", tmp_path / "r.db")
    assert result.exit_code == 2
    assert 'derived metric "x": sql: must be one scalar expression' in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1", "1e400"])
def test_max_cost_must_be_a_finite_budget(tmp_path, value):
    suite = tmp_path / "suite.yaml"
    suite.write_text("tests:\n  - assert: [{type: contains, value: a}]\n")
    result = invoke("eval", suite, "--db", tmp_path / "r.db", "--judge-model", "gpt-4o",
                    "--max-cost", value)
    assert result.exit_code == 2, result.output
    assert "max_cost must be" in result.output and "Traceback" not in result.output


KEYS = ["Q", "Z7", "xQ9", "s3cr3t", "sk-test-SECRET-0123456789"]  # all shorter than 8 but one


@pytest.mark.parametrize("key", KEYS)
def test_keys_of_any_length_are_redacted(tmp_path, monkeypatch, key):
    """The endpoint echoes the Authorization header (401) or the key itself (a reply)."""
    monkeypatch.setenv("CHECKLLM_SHORT_KEY", key)
    echo = JudgeServer(reject=lambda body: 401 if "reject" in str(body) else None,
                       answer=lambda body: json.dumps(
                           {"pass": True, "score": 1, "reason": f"key is {key}"})).start()
    try:
        suite = tmp_path / "suite.yaml"
        suite.write_text("tests:\n  - assert:\n      - {type: llm-rubric, value: reject}\n"
                         "      - {type: llm-rubric, value: answer}\n")
        config = JudgeConfig(model="gpt-4o-mini", base_url=echo.url, retries=0,
                             api_key_env="CHECKLLM_SHORT_KEY")
        run = api.evaluate(suite, pl.DataFrame({"output": ["x"]}), judge_config=config)
        reasons = run.assertion_results["reason"].to_list()
        assert "HTTP 401" in reasons[0] and "***" in reasons[0], reasons
        assert "***" in reasons[1], reasons
        stored = str(run.con.execute("SELECT * FROM judge_calls").fetchall())
        assert key not in stored and key not in str(reasons)
    finally:
        echo.stop()


@pytest.mark.parametrize("given", ["sk-proj-abc123DEF456", "sk_live.123", "key with space"])
def test_a_key_given_as_the_key_env_is_refused_and_not_echoed(tmp_path, given):
    suite = tmp_path / "suite.yaml"
    suite.write_text("tests:\n  - assert: [{type: contains, value: a}]\n")
    result = invoke("eval", suite, "--db", tmp_path / "r.db", "--judge-model", "gpt-4o",
                    "--judge-key-env", given)
    assert result.exit_code == 2
    assert "must name an environment variable" in result.output and given not in result.output
    assert not (tmp_path / "r.db").exists()


def test_a_key_shaped_like_a_name_is_withheld_from_runs_config(tmp_path):
    """A lower-case token that is no variable of the environment may be a key: the run keeps
    `(withheld)`; a conventional or a set variable name is kept."""
    assert JudgeConfig(api_key_env="abcdef0123456789abcdef").record()["api_key_env"] == \
        "(withheld)"
    assert JudgeConfig(api_key_env="MY_JUDGE_KEY").record()["api_key_env"] == "MY_JUDGE_KEY"
    suite = tmp_path / "suite.yaml"
    suite.write_text("tests:\n  - assert: [{type: contains, value: a}]\n")
    (tmp_path / "out.jsonl").write_text('{"output": "a"}\n')
    result = invoke("eval", suite, "--outputs", tmp_path / "out.jsonl", "--db", tmp_path / "r.db",
                    "--judge-key-env", "abcdef0123456789abcdef")
    assert result.exit_code == 0, result.output
    config = duckdb.connect(str(tmp_path / "r.db")).sql("SELECT config FROM runs").fetchall()
    assert "abcdef0123456789abcdef" not in str(config) and "(withheld)" in str(config)


def test_a_key_given_as_its_variable_name_is_not_echoed_in_the_error(tmp_path):
    """With a judge model and no base_url, the key is needed: the error names the variable
    to set, but never a value that looks like a key given by mistake."""
    suite = tmp_path / "suite.yaml"
    suite.write_text("tests:\n  - assert: [{type: llm-rubric, value: polite}]\n")
    (tmp_path / "out.jsonl").write_text('{"output": "a"}\n')
    for given, said in (("sk_fakekey_qa1234567890secret", "looks like a key given by mistake"),
                        ("MY_UNSET_JUDGE_KEY", "set MY_UNSET_JUDGE_KEY (the judge's API key)")):
        result = invoke("eval", suite, "--outputs", tmp_path / "out.jsonl", "--db",
                        tmp_path / "r.db", "--judge-model", "gpt-4o-mini", "--judge-key-env",
                        given)
        assert result.exit_code == 2 and said in result.output, result.output
        assert "sk_fakekey" not in result.output


def test_judge_settings_from_code_are_checked_too(tmp_path):
    with pytest.raises(ConfigError, match="concurrency must be > 0"):
        JudgeConfig.from_sources({"concurrency": 0})
    suite = tmp_path / "suite.yaml"
    suite.write_text("tests:\n  - assert: [{type: contains, value: a}]\n")
    with pytest.raises(ConfigError) as e:
        api.evaluate(suite, pl.DataFrame({"output": ["a"]}),
                     judge_config=JudgeConfig(model="m", retries="x", max_cost=float("nan")))
    assert [str(p) for p in e.value.problems] == ["judge: retries must be an integer, got 'x'",
                                                  "judge: max_cost must be a finite number, "
                                                  "got nan"]
