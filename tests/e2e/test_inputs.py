"""Damaged inputs: every bad suite or dataset ends as exit 2 with one line naming the place
(file:line, test, assertion, the closest valid name), never a traceback or a silent pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import checkllm_batch as cb
from checkllm_batch.cli import main
from checkllm_batch.errors import ConfigError, InputError

OK = "tests:\n  - assert: [{type: contains, value: h}]\n"
# 10 ** 7 values once expanded, from 7 short lines
BOMB = "".join(f"{n}: &{n} [{', '.join([f'*{p}'] * 10 if p else ['x'] * 10)}]\n"
               for p, n in zip(["", *"abcdef"], "abcdefg")) + OK

SUITES = [
    # (suite text or bytes, the one line it must end as; {f} is the suite's path)
    # promptfoo 0.123.1 accepts the defaultTest `asert:` typo silently (exit 0, the test
    # passes with score 1, no warning): issue 10 wants the error.
    ("defaultTest:\n  asert:\n    - {type: contains, value: zzz}\n",
     '{f}:2, defaultTest: unknown defaultTest field "asert" (did you mean "assert"?)'),
    ("defaultTest:\n  asserts: []\n",
     '{f}:2, defaultTest: unknown defaultTest field "asserts" (did you mean "assert"?)'),
    ("defaultTest:\n  options: {transform: output.trim()}\n",
     "{f}:2, defaultTest: options.transform cannot run here: it is JavaScript run on each "
     "output or its vars; apply it to the outputs before scoring, got 'output.trim()'"),
    ("defaultTest: tests.yaml\n", "{f}:1: defaultTest must be a mapping or file://, got "
     "'tests.yaml'"),
    ("tests:\n  - vars: [1, 2]\n", "{f}:2, test 1: vars must be a mapping, got [1, 2]"),
    ("tests:\n  - description: café ☕\n    vars: 'x'\n",
     "{f}:2, test 1 (\"café ☕\"): vars must be a mapping, got 'x'"),
    ("tests:\n  - assert: contains\n", "{f}:2, test 1: assert must be a list, got 'contains'"),
    ("tests:\n  - options: [1]\n", "{f}:2, test 1: options must be a mapping, got [1]"),
    ("tests:\n  - options: {provder: x}\n",
     '{f}:2, test 1: unknown field "options.provder" (did you mean "provider"?)'),
    ("tests:\n  - options: {factuality: {agree: high}}\n",
     "{f}:2, test 1: options.factuality.agree must be a number, got 'high'"),
    ("tests:\n  - threshold: 1" + "0" * 400 + "\n",
     "{f}:2: invalid YAML: integer 10000000000000000000... is too large (64 bits at most)"),
    ("tests:\n  - threshold: 1e400\n", "{f}:2, test 1: threshold must be a finite number, got inf"),
    ("tests:\n  - threshold: .nan\n", "{f}:2, test 1: threshold must be a finite number, got nan"),
    ("tests:\n  - assert: [{type: contains, value: h, threshold: .inf}]\n",
     "{f}:2, test 1, assert 1 (contains): threshold must be a finite number, got inf"),
    ("tests:\n  - assert: [{type: contains, value: h, weight: true}]\n",
     "{f}:2, test 1, assert 1 (contains): weight must be a number, got True"),
    ("tests:\n  - assert: [{type: contains, value: h, metric: ''}]\n",
     "{f}:2, test 1, assert 1 (contains): metric must have at least 1 character, got ''"),
    ("tests:\n  - assert: [{type: contains, value: h, metricOnly: 'yes'}]\n",
     "{f}:2, test 1, assert 1 (contains): metricOnly must be true or false, got 'yes'"),
    ("tests:\n  - assert: [{type: contains, value: h, config: [1]}]\n",
     "{f}:2, test 1, assert 1 (contains): config must be a mapping, got [1]"),
    ("tests:\n  - assert: [null]\n",
     "{f}:2, test 1, assert 1: an assertion must be a mapping with a string `type`"),
    ("tests:\n  - id: a\n  - id: a\n", '{f}:3, test 2: duplicate test id "a" (also test 1)'),
    ("tests:\n  - id: [a]\n", "{f}:2, test 1: id must be a string or an integer, got ['a']"),
    ("tests:\n  - 5: x\n", "{f}:2: tests #1: key 5 must be a string"),
    ("tests:\n  -\n", "{f}:1: tests #1 must be a string or a mapping, got null"),
    ("tests:\n  - assert: [{type: contains, value: a}]\n    assert: []\n",
     "{f}:3: invalid YAML: duplicate key 'assert'"),
    ("judge: {retries: x}\n" + OK, "{f}:1, judge: retries must be an integer, got 'x'"),
    ("judge: {max_cost: x}\n" + OK, "{f}:1, judge: max_cost must be a number, got 'x'"),
    ("judge: {timeout: .nan}\n" + OK, "{f}:1, judge: timeout must be a finite number, got nan"),
    ("judge: {modle: gpt-4o}\n" + OK,
     '{f}:1, judge: unknown judge setting "modle" (did you mean "model"?)'),
    ("judge: [gpt-4o]\n" + OK, "{f}:1: judge must be a mapping, got ['gpt-4o']"),
    ("judge: {api_key_env: sk-abc-123}\n" + OK,
     "{f}:1, judge: api_key_env must name an environment variable (e.g. OPENAI_API_KEY), not "
     "hold the key (the value given is not shown)"),
    ("derivedMetrics: {a: 1}\n" + OK, "{f}:1: derivedMetrics must be a list, got {'a': 1}"),
    ("derivedMetrics:\n  - {name: x}\n" + OK,
     '{f}:2: derivedMetrics #1: "x" needs exactly one of `value`, `sql`'),
    ("derivedMetrics:\n  - {name: x, sql: '1; DROP TABLE y'}\n" + OK,
     '{f}: derived metric "x": sql: must be one scalar expression over the metric columns '
     "(no statement, no `;`), got '1; DROP TABLE y'"),
    ("descripton: x\n" + OK, '{f}:1: unknown top-level key "descripton" (did you mean '
     '"description"?)'),
    ("tests: 5\n", "{f}:1: tests must be a string, a mapping or a list, got 5"),
    (BOMB, "{f}:6: invalid YAML: aliases expand it past 1,000,000 values"),
    ("tests:\n  - vars: " + "[" * 200 + "]" * 200 + "\n",
     "{f}:2: invalid YAML: nested more than 100 levels deep"),
    ("tests:\n  - vars: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n",
     "{f}: invalid YAML: nested too deeply"),
    (b"tests:\n  - description: caf\xe9\n",
     "{f}:2: not UTF-8 text (byte 0xe9 at offset 27); save the file as UTF-8"),
    ("", "{f}: a suite must be a YAML mapping with `tests:`"),
    ("- a\n", "{f}: a suite must be a YAML mapping with `tests:`"),
]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def same(problems: list, message: str, path) -> bool:
    """`problems` print as the one line `message` names ({f}: the file; a trailing "..."
    leaves the rest, a third-party library's words, unchecked)."""
    lines = [str(p) for p in problems]
    message = message.replace("{f}", str(path))
    if message.endswith("..."):
        return len(lines) == 1 and lines[0].startswith(message[:-3])
    return lines == [message]


@pytest.mark.parametrize("text,message", SUITES)
def test_bad_suite_is_one_line_naming_the_place(tmp_path, text, message):
    suite = tmp_path / "suite.yaml"
    suite.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ConfigError) as e:
        cb.load(suite)
    assert same(e.value.problems, message, suite), e.value.problems


@pytest.mark.parametrize("text,message", SUITES[::4])
def test_bad_suite_exits_2_without_traceback(tmp_path, text, message):
    suite = tmp_path / "suite.yaml"
    suite.write_bytes(text if isinstance(text, bytes) else text.encode())
    result = invoke("eval", suite, "--db", tmp_path / "r.db")
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.exception
    assert same(result.output.strip().splitlines(), "Error: " + message, suite), result.output


def test_disable_default_asserts_is_honoured(tmp_path):
    """promptfoo: options.disableDefaultAsserts drops defaultTest's assertions for a test.
    promptfoo 0.123.1 (offline kit, the same suite): test 1 ran only `h` (pass, score 1),
    test 2 ran `zzz` and `h` (fail, score 0.5)."""
    suite = tmp_path / "suite.yaml"
    suite.write_text("defaultTest:\n  assert: [{type: contains, value: zzz}]\ntests:\n"
                     "  - options: {disableDefaultAsserts: true}\n"
                     "    assert: [{type: contains, value: h}]\n  - assert: []\n")
    tests = cb.load(suite).tests
    assert [[a.value for a in t.asserts] for t in tests] == [["h"], ["zzz"]]


def _parquet(path, **columns):
    pq.write_table(pa.table(columns), path)


DATASETS = [
    # (file name, bytes or a writer, the one line it must end as; {f} is the file's path)
    ("out.parquet", b"", "{f}: cannot read: Parquet file size is 0 bytes"),
    ("out.parquet", b"PAR1garbage", "{f}: cannot read: Parquet ..."),  # pyarrow's words
    ("out.csv", b"output\n\xff\xfe\n", "{f}: column 'output' is not UTF-8 text; save the file "
     "as UTF-8"),
    ("out.csv", b"output,output\na,b\n", "{f}: column 'output' appears more than once"),
    ("out.csv", b"", "{f}: cannot read: Empty CSV file"),
    ("out.jsonl", b"", "{f}: no rows"),
    ("out.jsonl", b'{"output": "h", "__test_index": 5}\n',
     "{f}: column '__test_index' is reserved for the engine (names case_id, test_index, "
     "output_kind and any starting with __); rename it"),
    ("out.jsonl", b'{"output": "h", "output_kind": "json"}\n',
     "{f}: column 'output_kind' is reserved for the engine (names case_id, test_index, "
     "output_kind and any starting with __); rename it"),
    ("out.csv", "output,case_id\nh,1\n".encode(),
     "{f}: column 'case_id' is reserved for the engine (names case_id, test_index, "
     "output_kind and any starting with __); rename it"),
    ("out.parquet", lambda p: _parquet(p, output=["h"], test_index=[0]),
     "{f}: column 'test_index' is reserved for the engine (names case_id, test_index, "
     "output_kind and any starting with __); rename it"),
    ("out.parquet", lambda p: _parquet(p, output=["ünï"], __row=[1]),
     "{f}: column '__row' is reserved for the engine (names case_id, test_index, "
     "output_kind and any starting with __); rename it"),
    ("out.jsonl", b'{"output": "h"}\n[1]\n', "{f}:2: each line must be a JSON object"),
    # Excel's "Unicode text": read as UTF-8 it was one column of NUL bytes
    ("out.csv", "output\nh\n".encode("utf-16"), "{f}: UTF-16 text; save the file as UTF-8"),
    ("out.csv", "\ufeffoutput\nh\n".encode("utf-16-be"),
     "{f}: UTF-16 text; save the file as UTF-8"),
    ("out.jsonl", '{"output": "h"}\n'.encode("utf-16"), "{f}: UTF-16 text; save the file as UTF-8"),
]


@pytest.mark.parametrize("name,content,message", DATASETS)
def test_bad_dataset_exits_2_with_one_line(tmp_path, name, content, message):
    suite = tmp_path / "suite.yaml"
    suite.write_text(OK)
    path = tmp_path / name
    content(path) if callable(content) else path.write_bytes(content)
    with pytest.raises(InputError) as e:
        cb.evaluate(suite, path)
    assert same([str(e.value)], message, path), str(e.value)
    result = invoke("eval", suite, "--outputs", path, "--db", tmp_path / "r.db")
    assert result.exit_code == 2, result.output
    assert same(result.output.strip().splitlines(), "Error: " + message, path), result.output


ROWS_WITHOUT = [
    # (JSONL rows, what the run ends as with --batch-rows 1 or a larger batch alike: each
    # case's status and reason, or the one error line)
    (['{"test_id": "t1", "output": "h"}', '{"test_id": "t1"}', '{"test_id": "t2", "output": "b"}'],
     [("pass", None), ("fail", "output is null"), ("pass", None)]),
    (['{"test_id": "t1", "output": "h"}', '{"output": "b"}'],
     "{f}: row 2 has no test_id (the id or description of the test it answers)"),
    (['{"test_id": "t1", "output": "h"}', '{"test_id": null, "output": "b"}'],
     "{f}: row 2 has no test_id (the id or description of the test it answers)"),
    (['\ufeff{"test_id": "t1", "output": "h"}', '{"test_id": "t2", "output": "b"}'],
     [("pass", None), ("pass", None)]),  # a byte-order mark, as in a CSV file
]


@pytest.mark.parametrize("batch_rows", [1, 1000])
@pytest.mark.parametrize("lines,expected", ROWS_WITHOUT)
def test_a_jsonl_row_without_a_key_is_the_same_in_any_batch(tmp_path, lines, expected,
                                                            batch_rows):
    """A row without `output` used to end the run ("no `output` column") when no row of its
    batch had one; a row without test_id was "test_id None is the description of 2 tests"."""
    suite, path = tmp_path / "suite.yaml", tmp_path / "out.jsonl"
    suite.write_text("tests:\n  - id: t1\n    assert: [{type: contains, value: h}]\n"
                     "  - id: t2\n    assert: [{type: equals, value: b}]\n")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if isinstance(expected, str):
        with pytest.raises(InputError) as e:
            cb.evaluate(suite, path, batch_rows=batch_rows)
        assert same([str(e.value)], expected, path), str(e.value)
        return
    got = cb.evaluate(suite, path, batch_rows=batch_rows).assertion_results.sort("case_id")
    assert got.select("status", "reason").rows() == expected


def test_a_control_character_in_a_name_stays_on_the_error_line(tmp_path):
    """A column name from a damaged file holding a line separator (\\x1c, U+2028) is
    printed escaped: the error stays one line naming the file."""
    suite, path = tmp_path / "suite.yaml", tmp_path / "out.csv"
    suite.write_text(OK)
    path.write_bytes("test_id,\x1cutput\u2028\n1,a\n".encode())
    result = invoke("eval", suite, "--outputs", path, "--db", tmp_path / "r.db")
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        f"Error: {path}: no `output` column (did you mean \"\\x1cutput\\u2028\"?); "
        "columns are: test_id, \\x1cutput\\u2028"], result.output


def test_reserved_names_in_a_frame_are_refused(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text(OK)
    with pytest.raises(InputError, match="column 'test_index' is reserved"):
        cb.evaluate(suite, pl.DataFrame({"output": ["h"], "test_index": [3]}))


LOGPROBS = [
    # (logprobs cell, the perplexity assertion's status)
    ("[-0.1, -0.2]", "pass"),
    ("not json", "error"),
    ("", "error"),
    ("[1, \"x\"]", "error"),
    (None, "error"),
]


@pytest.mark.parametrize("logprobs,status", LOGPROBS)
def test_unreadable_logprobs_fail_only_their_row(tmp_path, logprobs, status):
    suite = tmp_path / "suite.yaml"
    suite.write_text("tests:\n  - assert: [{type: perplexity, threshold: 100}]\n")
    frame = pl.DataFrame({"output": ["a", "b"], "logprobs": [logprobs, "[-0.5]"]},
                         schema={"output": pl.String, "logprobs": pl.String})
    rows = cb.evaluate(suite, frame).assertion_results.sort("case_id")
    assert rows["status"].to_list() == [status, "pass"]
    assert rows["status"][0] == "pass" or rows["reason"][0]


TEST_FILES = [
    # (tests file name, bytes (None: a folder of that name), the one line)
    ("t.csv", b"a,__expected\n\xff,contains:h\n",
     "{f}:2: not UTF-8 text (byte 0xff at offset 13); save the file as UTF-8"),
    ("t.csv", b"a,a,__expected\n1,2,contains:h\n", "{f}:1: column 'a' appears more than once"),
    ("t.parquet", b"garbage", "{f}: cannot read: Could not open Parquet input source ..."),
    ("t.jsonl", b'{"vars": {}}\n"a"\n', "{f}:2: each line must be a JSON object (a test)"),
    ("t.yaml", b"- vars: {a: 1}\n  vars: {a: 2}\n", "{f}:2: invalid YAML: duplicate key 'vars'"),
    ("t.csv", None, "{f}: a tests file must be a file, not a folder"),
    ("t.jsonl", None, "{f}: a tests file must be a file, not a folder"),
    ("t.jsonl", b'{"vars": {"n": 1' + b"0" * 30 + b'}}\n',
     "{f}:1: invalid JSON: integer 10000000000000000000... is too large (64 bits at most)"),
    # a YAML/JSON tests file holds a test mapping or a list of them (the same item written
    # inline is "tests #1 must be a string or a mapping")
    *[(name, content, "{f}: no tests: the file holds nothing (write a test mapping or a list "
       "of them)") for name, content in [("t.yaml", b""), ("t.yaml", b"# only a comment\n"),
                                         ("t.json", b"null"), ("t.yml", b"~\n")]],
    ("t.yaml", b"42\n", "{f}, test 1: the value must be a mapping, got 42"),
    ("t.yaml", b"- 5\n", "{f}, test 1: the value must be a mapping, got 5"),
    ("t.yaml", b"- null\n", "{f}, test 1: the value must be a mapping, got null"),
    ("t.yaml", "- ünï ☕\n".encode(), "{f}, test 1: the value must be a mapping, got 'ünï ☕'"),
    ("t.json", b'[{"vars": {}}, [1]]', "{f}, test 2: the value must be a mapping, got [1]"),
    ("t.json", b'""', "{f}, test 1: the value must be a mapping, got ''"),
    # every row as long as the header, as promptfoo's csv-parse wants: never a cell dropped,
    # never a short row that becomes a test without its assertions
    ("t.csv", b"id,q,__expected\nt1,hi,contains:hello\nt2\n",
     "{f}:3: 1 cell where the header has 3"),
    ("t.csv", "id,q,__expected\nt1,hï,contains:h\nt2,bye,bye,extra\n".encode(),
     "{f}:3: 4 cells where the header has 3"),
    ("t.csv", b'id,__expected\r\n"t\n1",contains:h\r\n\r\nt2,contains:a,\r\n',
     "{f}:5: 3 cells where the header has 2"),
]


@pytest.mark.parametrize("name,content,message", TEST_FILES)
def test_bad_tests_file_is_one_line(tmp_path, name, content, message):
    (tmp_path / name).mkdir() if content is None else (tmp_path / name).write_bytes(content)
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"tests: file://{name}\n")
    with pytest.raises(ConfigError) as e:
        cb.load(suite)
    assert same(e.value.problems, message, tmp_path / name), e.value.problems


@pytest.mark.parametrize("name,content,message", TEST_FILES)
def test_bad_tests_file_exits_2_without_traceback(tmp_path, name, content, message):
    (tmp_path / name).mkdir() if content is None else (tmp_path / name).write_bytes(content)
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"tests: file://{name}\n")
    result = invoke("eval", suite, "--db", tmp_path / "r.db")
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.exception
    assert same(result.stderr.strip().splitlines(), "Error: " + message, tmp_path / name), \
        result.stderr


def test_every_item_that_is_no_test_is_named(tmp_path):
    (tmp_path / "t.yaml").write_text("[1, 2]\n")
    (tmp_path / "suite.yaml").write_text("tests: [file://t.yaml]\n")
    result = invoke("eval", tmp_path / "suite.yaml", "--db", tmp_path / "r.db")
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.exception
    assert result.stderr.splitlines() == [
        f"Error: {tmp_path / 't.yaml'}, test 1: the value must be a mapping, got 1",
        f"{tmp_path / 't.yaml'}, test 2: the value must be a mapping, got 2"]


def test_a_tests_error_names_the_file_the_test_came_from(tmp_path):
    """Not the last file of `tests:`, as it used to be."""
    (tmp_path / "a.yaml").write_text("- 5\n")
    (tmp_path / "b.yaml").write_text("- assert: [{type: contains, value: h}]\n")
    (tmp_path / "suite.yaml").write_text("tests: [file://a.yaml, file://b.yaml]\n")
    with pytest.raises(ConfigError) as e:
        cb.load(tmp_path / "suite.yaml")
    assert [str(p) for p in e.value.problems] == [
        f"{tmp_path / 'a.yaml'}, test 1: the value must be a mapping, got 5"]


CSV_ROWS = [
    # (a tests CSV that is whole, the tests it holds): an empty line is no row
    (b"id,__expected\nt1,contains:h\n\n", ["t1"]),
    (b"id,__expected\r\nt1,contains:h\r\n\r\nt2,contains:a\r\n", ["t1", "t2"]),
    ('id,__expected\n"ünï,\n☕",contains:h\n,\n'.encode(), ["ünï,\n☕", ""]),
    (b"id,__expected\nt1,contains:h", ["t1"]),
]


@pytest.mark.parametrize("content,ids", CSV_ROWS)
def test_a_whole_tests_csv_loads(tmp_path, content, ids):
    (tmp_path / "t.csv").write_bytes(content)
    (tmp_path / "suite.yaml").write_text("tests: file://t.csv\n")
    assert [t.id for t in cb.load(tmp_path / "suite.yaml").tests] == ids


def test_a_description_shared_by_two_tests_routes_no_row(tmp_path):
    """Rows used to go to the last test of that description, silently."""
    suite = tmp_path / "suite.yaml"
    suite.write_text("tests:\n  - description: same\n    assert: [{type: contains, value: a}]\n"
                     "  - description: same\n    assert: [{type: contains, value: b}]\n"
                     "  - description: other\n    assert: [{type: contains, value: c}]\n")
    frame = pl.DataFrame({"test_id": ["other", "same"], "output": ["c", "a"]})
    with pytest.raises(InputError) as e:
        cb.evaluate(suite, frame)
    assert str(e.value) == ("<polars.DataFrame>: row 2: test_id 'same' is the description of 2 tests "
                            '(test 1 ("same"), test 2 ("same")): give them ids')
    assert cb.evaluate(suite, frame.head(1)).test_results["pass"].to_list() == [True]


def test_reading_parquet_holds_one_row_group_not_the_file(tmp_path):
    """Streaming a Parquet file keeps Arrow's memory at about one batch: pyarrow's
    pre-buffering kept every row group read so far (a 10M-row run's memory grew with the
    file). Counted in Arrow's allocator (bytes, not time): 20 row groups of ~4 MiB."""
    from checkllm_batch.load.outputs import read_batches

    path = tmp_path / "o.parquet"
    pq.write_table(pa.table({"output": [f"row {i} ünï " * 40 for i in range(200_000)]}),
                   path, row_group_size=10_000, compression="none")
    base, held = pa.total_allocated_bytes(), 0
    for batch in read_batches(str(path), 10_000):
        del batch
        held = max(held, pa.total_allocated_bytes() - base)
    assert held < 4 * (path.stat().st_size / 20), held  # a few row groups, never the file



NARROW = [f"{i:05d}" for i in range(3000)]
WIDE = [f"{i:05d}" + ("x" * 2000 if i % 2 else "") for i in range(3000, 3600)]


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl", "table"])
@pytest.mark.parametrize("texts", [NARROW, NARROW + WIDE], ids=["narrow", "wide"])
def test_wide_rows_make_short_batches(monkeypatch, tmp_path, suffix, texts):
    """A batch's memory in flight grows with its bytes, not its rows: rows are cut into even
    batches of about BATCH_BYTES (100 KB here), never more than batch_rows; every row once,
    in order, and one case per row whatever the batches."""
    from checkllm_batch.load import outputs, stream

    monkeypatch.setattr(stream, "BATCH_BYTES", 100_000)
    table = pa.table({"output": texts})
    path = tmp_path / f"o{suffix}"
    if suffix == ".parquet":
        pq.write_table(table, path)
    elif suffix == ".jsonl":
        pl.from_arrow(table).write_ndjson(path)
    if suffix != "table":
        batches = list(outputs.read_batches(str(path), 1000))
        assert pa.Table.from_batches(batches)["output"].to_pylist() == texts
        assert all(b.num_rows <= 1000 and b.nbytes <= 150_000 for b in batches)
        if texts == NARROW:  # 3000 rows, 48 KB
            assert [b.num_rows for b in batches] == [1000, 1000, 1000]
    suite = tmp_path / "s.yaml"
    suite.write_text("tests:\n  - assert: [{type: contains, value: '0'}]\n")
    run = cb.evaluate(str(suite), table if suffix == "table" else str(path),
                      db=tmp_path / "r.duckdb", batch_rows=1000)
    sizes = run.con.execute("SELECT list(rows ORDER BY batch) FROM run_batches").fetchone()[0]
    assert sum(sizes) == len(texts) and max(sizes) <= 1000
    assert len(sizes) == 3 if texts == NARROW else len(sizes) >= 6  # 650 KB: 6 at least
    got = run.con.execute("SELECT list(output ORDER BY case_id) FROM cases").fetchone()[0]
    assert got == texts


def test_an_empty_batch_is_no_batch():
    """A reader's empty batch (an empty table, a CSV of headers only) is skipped, not an
    error: the run then says the source has no rows."""
    from checkllm_batch.load.stream import rechunk

    empty = pa.record_batch({"output": pa.array([], pa.string())})
    one = pa.record_batch({"output": ["a"]})
    assert [b.num_rows for b in rechunk([empty, one, empty], 10)] == [1]


def test_the_reader_runs_one_batch_ahead_and_no_more():
    """While the caller works on a batch, the read-ahead thread decodes the next one and
    waits there: each batch held ahead is up to ~64 MiB of a run's memory. Its errors reach
    the caller in order, after the batches read before them."""
    import time

    from checkllm_batch.load.stream import read_ahead

    pulled: list[int] = []

    def source():
        for i in range(4):
            pulled.append(i)
            yield i
        raise OSError("damaged after four batches")

    batches = read_ahead(source())
    assert next(batches) == 0
    deadline = time.monotonic() + 30
    while len(pulled) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # time enough to read further, were it allowed to
    assert pulled == [0, 1]
    assert [next(batches) for _ in range(3)] == [1, 2, 3]
    with pytest.raises(OSError, match="damaged after four batches"):
        next(batches)


def test_a_reader_left_early_closes_its_source():
    """A later stage fails (an unknown test_id in batch 3): the reader stops and its source
    (a file, a DuckDB connection) is closed then, not left open in a thread to the end of
    the process, where DuckDB reported its objects as leaked."""
    from checkllm_batch.load.stream import read_ahead

    closed: list[bool] = []

    def source():
        try:
            yield from range(100)
        finally:
            closed.append(True)

    batches = read_ahead(source())
    assert next(batches) == 0
    batches.close()
    assert closed == [True]


@pytest.mark.parametrize("table, message", [
    ("SELECT 'a' AS outpt FROM range(10)", "no `output` column"),
    ("SELECT 'a' AS output, CASE WHEN range = 5 THEN 'nope' ELSE 't' END AS test_id "
     "FROM range(10)", "row 6: test_id 'nope' matches no test"),
])
def test_a_duckdb_source_stopped_by_bad_input_is_one_line(tmp_path, table, message):
    source = tmp_path / "src.duckdb"
    with duckdb.connect(str(source)) as con:
        con.execute(f"CREATE TABLE outs AS {table}")
    (tmp_path / "s.yaml").write_text("tests:\n  - id: t\n    assert: [{type: contains, "
                                     "value: a}]\n")
    done = subprocess.run(
        [str(Path(sys.executable).parent / "checkllm-batch"), "eval", "s.yaml", "--outputs",
         f"duckdb:{source}:outs", "--db", "r.duckdb", "--batch-rows", "2"], cwd=tmp_path,
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    [line] = done.stderr.splitlines()
    assert line.startswith(f"Error: duckdb:{source}:outs: ") and message in line


CSV_CELLS = [
    # (a `code` cell, the output cell, contains '{{code}}'): a CSV cell is text, as promptfoo
    # reads it; guessed as a number or a boolean, 007 was 7 and "x 7 y" passed
    ("007", "007", "pass"),
    ("007", "x 7 y", "fail"),
    ("1.50", "1.50", "pass"),
    ("1.50", "costs 1.5", "fail"),
    ("True", "True", "pass"),
    ("True", "true", "fail"),
    ("1e3", "1e3", "pass"),
    ("1e3", "1000", "fail"),
    ("", "", "error"),  # an empty cell is "", not null: contains needs a non-empty value
    ("ünï", "ünï", "pass"),
]


@pytest.mark.parametrize("code,output,status", CSV_CELLS)
def test_a_csv_cell_stays_text(tmp_path, code, output, status):
    """Every cell of an outputs CSV is read as written, the test_id `01` included."""
    suite, path = tmp_path / "suite.yaml", tmp_path / "out.csv"
    suite.write_text("tests:\n  - id: '01'\n    assert: [{type: contains, value: '{{code}}'}]\n"
                     "  - id: '1'\n")
    path.write_text(f'test_id,output,code,latency_ms\n"01",{output},{code},{code}\n')
    result = invoke("eval", suite, "--outputs", path, "--db", tmp_path / "r.duckdb")
    assert result.exit_code in (0, 1), result.output
    run = cb.get_run(tmp_path / "r.duckdb")
    case = run.con.execute("SELECT test_id, output, output_kind, vars FROM cases").fetchall()
    assert case == [("01", output, "text", f'{{"code":"{code}"}}')]
    assert run.assertion_results["status"].to_list() == [status]


def test_a_csv_column_of_numbers_may_hold_text_later(tmp_path):
    """A column of numbers in the CSV's first block (1 MB) and text after it: the run used to
    stop there ("CSV conversion error to int64"). Every row is read, as text."""
    suite, path = tmp_path / "suite.yaml", tmp_path / "out.csv"
    suite.write_text("tests:\n  - assert: [{type: equals, value: '42'}]\n")
    pad = "p" * 200
    path.write_text("output,pad\n" + f"42,{pad}\n" * 6000 + f"forty-two,{pad}\n")
    run = cb.evaluate(suite, path, batch_rows=1000)
    statuses = run.assertion_results.sort("case_id")["status"].to_list()
    assert statuses == ["pass"] * 6000 + ["fail"]


def test_an_empty_csv_output_is_text_and_a_missing_one_null(tmp_path):
    """An empty output cell is the empty text (a model that answered nothing), an empty var
    the empty string; in JSONL a null output is null. Both fail a text check, each with its
    reason. An empty cell in a column of what the provider recorded (prompt, tool_calls, ...)
    is null, nothing recorded: the test's prompt stays, no tool was called."""
    suite = tmp_path / "suite.yaml"
    suite.write_text("tests:\n  - prompt: tp\n    assert: [{type: contains, value: h}, "
                     "{type: tools-called, value: [f]}]\n")
    (tmp_path / "out.csv").write_text('output,q,prompt,tool_calls,provider\n"",,,,\n')
    (tmp_path / "out.jsonl").write_text('{"output": null, "q": "", "tool_calls": null}\n')
    for name, output, kind, reason in [
            ("out.csv", "", "text", 'Expected output to contain "h"'),
            ("out.jsonl", None, "null", "output is null")]:
        run = cb.evaluate(suite, tmp_path / name)
        case = run.con.execute("SELECT output, output_kind, prompt, provider, vars "
                               "FROM cases").fetchall()
        assert case == [(output, kind, "tp", None, '{"q":""}')], name
        results = run.assertion_results.sort("assertion_index")
        assert results["status"].to_list() == ["fail", "fail"], name
        assert results["reason"][0] == reason
        assert results["reason"][1].endswith("called: no tools")


def _dictionary_outputs(path):
    table = pa.table({"test_id": ["a", "b", "a"], "output": ["hello", "bye", "ünï"],
                      "code": ["hel", "zzz", ""]})
    table = pa.table({n: c.dictionary_encode() for n, c in zip(table.column_names,
                                                                table.columns)})
    if path.suffix == ".parquet":
        pq.write_table(table, path)
    elif path.suffix == ".arrow":
        with pa.ipc.new_file(path, table.schema) as writer:
            writer.write_table(table)
    return table


@pytest.mark.parametrize("name", ["out.parquet", "out.arrow", "table"])
def test_a_dictionary_of_strings_is_text(tmp_path, name):
    """pandas `category`, an Arrow dictionary or a DuckDB ENUM: the output, the test_id and
    the vars are their text (the output was scored as a JSON value, in quotes)."""
    suite = tmp_path / "suite.yaml"
    suite.write_text("tests:\n  - id: a\n    assert: [{type: contains, value: '{{code}}'}]\n"
                     "  - id: b\n    assert: [{type: equals, value: bye}]\n")
    table = _dictionary_outputs(tmp_path / name)
    if name == "table":
        assert pa.types.is_dictionary(table.schema.field("output").type)
    run = cb.evaluate(suite, table if name == "table" else tmp_path / name)
    cases = run.con.execute("SELECT test_id, output, output_kind, vars FROM cases "
                            "ORDER BY case_id").fetchall()
    assert cases == [("a", "hello", "text", '{"code":"hel"}'),
                     ("b", "bye", "text", '{"code":"zzz"}'),
                     ("a", "ünï", "text", '{"code":""}')]
    statuses = run.assertion_results.sort("case_id")["status"].to_list()
    assert statuses == ["pass", "pass", "error"]


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_rows_description_is_its_cases(tmp_path, suffix):
    """A `description` column describes its row's case (the filters read it too); a row
    without one keeps its test's. It used to vanish: neither a var nor the description."""
    suite, path = tmp_path / "suite.yaml", tmp_path / f"out{suffix}"
    suite.write_text("defaultTest:\n  assert: [{type: contains, value: '{{w}}'}]\n")
    frame = pl.DataFrame({"output": ["hello", "bye"], "description": ["greeting", None],
                          "w": ["hello", "x"]})
    frame.write_parquet(path) if suffix == ".parquet" else frame.write_ndjson(path)
    run = cb.evaluate(suite, str(path), db=tmp_path / "r.duckdb")
    rows = run.con.execute("SELECT description, vars FROM cases ORDER BY case_id").fetchall()
    assert rows == [("greeting", '{"w":"hello"}'), ("default test", '{"w":"x"}')]
