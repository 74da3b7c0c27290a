"""Property-based fuzzing: damaged suites and datasets end as a finished run (exit 0 / 1) or
as exit 2 with clean lines naming the place, never a traceback, within a time and memory
bound. Derandomized, a fixed number of examples: the same cases run in CI every time."""

from __future__ import annotations

import copy
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from checkllm_batch.cli import main

SUITE = {
    "description": "fuzz base ✓",
    "defaultTest": {"vars": {"lang": "en"}, "options": {"provider": "openai:gpt-4o-mini"},
                    "assert": [{"type": "is-json", "metric": "json"}]},
    "tests": [
        {"id": "capital", "vars": {"city": "Paris"}, "threshold": 0.5,
         "assert": [{"type": "contains", "value": "{{city}}", "metric": "tp"},
                    {"type": "levenshtein", "value": "Paris", "threshold": 3},
                    {"type": "assert-set", "threshold": 0.5, "assert": [
                        {"type": "icontains", "value": "paris"},
                        {"type": "regex", "value": "^[A-Z]"}]}]},
        {"id": "math", "description": "sums", "vars": {"n": 2},
         "assert": [{"type": "equals", "value": "4", "weight": 2},
                    {"type": "not-contains", "value": "five", "metric": "fp"},
                    {"type": "llm-rubric", "value": "is correct"}]},
    ],
    "derivedMetrics": [{"name": "precision", "value": "tp / (tp + fp)"},
                       {"name": "both", "sql": "tp + fp"}],
}
ROWS = ('{"test_id": "capital", "output": "{\\"city\\": \\"Paris\\"}", "latency_ms": 10}\n'
        '{"test_id": "math", "output": "4", "logprobs": "[-0.1, -0.2]"}\n'
        '{"test_id": "math", "output": null, "extra": [1, 2]}\n'
        '{"test_id": "capital", "output": "Pärïs ☕", "extra": {"a": 1}}\n')
CSV_ROWS = "test_id,output,note\ncapital,Paris,ok\nmath,4,\"a, b\"\n"

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 10**3), st.just(10**400),
    st.sampled_from([float("nan"), float("inf"), -0.0, 1e308, 0.5]),
    st.text(max_size=12), st.sampled_from(["{{city}}", "{{missing}}", "file://nope.yaml",
                                           "{% if x %}", "", "__test_index", "ü"]))
VALUES = st.one_of(SCALARS, st.lists(SCALARS, max_size=3),
                   st.dictionaries(st.text(max_size=6), SCALARS, max_size=3))


def _paths(node: Any, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, path + (i,))
    return out


def _get(node: Any, path: tuple) -> Any:
    for p in path:
        node = node[p]
    return node


def _typo(key: str, data) -> str:
    ops = ["drop", "swap", "double", "case"]
    op, i = data.draw(st.sampled_from(ops)), data.draw(st.integers(0, max(len(key) - 1, 0)))
    if not key:
        return "x"
    if op == "drop":
        return key[:i] + key[i + 1:] or "y"
    if op == "swap" and len(key) > 1:
        i = min(i, len(key) - 2)
        return key[:i] + key[i + 1] + key[i] + key[i + 2:]
    if op == "double":
        return key[:i] + key[i] + key[i:]
    return key.upper() if key != key.upper() else key.lower()


def damage_tree(data) -> str:
    """Type swaps, key typos, deletions and deep nesting at random places of the suite."""
    suite = copy.deepcopy(SUITE)
    for _ in range(data.draw(st.integers(1, 3))):
        paths = [p for p in _paths(suite) if p]
        path = data.draw(st.sampled_from(paths))
        parent, last = _get(suite, path[:-1]), path[-1]
        op = data.draw(st.sampled_from(["swap", "typo", "delete", "nest"]))
        if op == "swap":
            parent[last] = data.draw(VALUES)
        elif op == "typo" and isinstance(parent, dict):
            parent[_typo(str(last), data)] = parent.pop(last)
        elif op == "delete":
            del parent[last]
        elif op == "nest":
            value = parent[last]
            for _ in range(data.draw(st.integers(1, 150))):
                value = [value] if data.draw(st.booleans()) else {"k": value}
            parent[last] = value
        if not suite or not isinstance(suite, dict):
            break
    return yaml.safe_dump(suite, allow_unicode=True, sort_keys=False, width=10**6)


def damage_text(text: str, data) -> bytes:
    """Byte flips, truncation, a duplicate key, aliases (a bomb, or a small shared value)."""
    raw = text.encode()
    op = data.draw(st.sampled_from(["flip", "truncate", "duplicate", "bomb", "alias"]))
    if op == "flip":
        raw = bytearray(raw)
        for _ in range(data.draw(st.integers(1, 4))):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
        return bytes(raw)
    if op == "truncate":
        return raw[:data.draw(st.integers(0, len(raw)))]
    if op == "duplicate":
        return raw.replace(b"tests:\n", b"tests: []\ntests:\n", 1)
    levels = data.draw(st.integers(2, 9)) if op == "bomb" else 2
    lines = "".join(f"x{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10 if n else ['v'] * 10)}]\n"
                    for n in range(levels))
    body = text.replace("lang: en", f"lang: *a{levels - 1}", 1)
    return (lines + body).encode()


def damage_rows(data) -> tuple[str, bytes]:
    kind = data.draw(st.sampled_from(["jsonl", "csv"]))
    text = ROWS if kind == "jsonl" else CSV_ROWS
    op = data.draw(st.sampled_from(["flip", "truncate", "reserved", "column", "types"]))
    if op == "reserved":
        name = data.draw(st.sampled_from(["__test_index", "output_kind", "case_id", "test_index",
                                          "__x", "output"]))
        text = text.replace("extra" if kind == "jsonl" else "note", name)
    elif op == "column":
        text = text.replace("output", data.draw(st.sampled_from(["outptu", "Output", ""])), 1)
    elif op == "types" and kind == "jsonl":
        value = data.draw(st.sampled_from(["1e999", "[[[]]]", "{}", "true", '"x"', "-1"]))
        field = data.draw(st.sampled_from(["output", "latency_ms", "logprobs", "test_id"]))
        text = text.replace(f'"{field}": ', f'"{field}": {value}, "_{field}": ', 1)
    raw = text.encode()
    if op in ("flip", "truncate"):
        raw = damage_text(text, _Only(data, op)) if op == "flip" else \
            raw[:data.draw(st.integers(0, len(raw)))]
    return f"out.{kind}", raw


class _Only:
    """`data` whose first draw from sampled_from is fixed (to reuse damage_text's flips)."""

    def __init__(self, data, op: str):
        self.data, self.op, self.first = data, op, True

    def draw(self, strategy):
        if self.first:
            self.first = False
            return self.op
        return self.data.draw(strategy)


SECONDS = 30  # per example, on a busy 2-core CI machine; a healthy one takes well under 1 s
MEGABYTES = 600  # growth of the process's peak memory over all examples


def run_cli(suite: bytes, rows: tuple[str, bytes], files: dict[str, bytes] | None = None
            ) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "suite.yaml").write_bytes(suite)
        for name, content in (files or {}).items():
            (folder / name).write_bytes(content)
        (folder / rows[0]).write_bytes(rows[1])
        start = time.monotonic()
        result = CliRunner().invoke(main, ["eval", str(folder / "suite.yaml"), "--outputs",
                                           str(folder / rows[0]), "--db",
                                           str(folder / "r.duckdb"), "--no-progress"])
        assert time.monotonic() - start < SECONDS
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        (result.exception, result.output)
    assert "Traceback" not in result.output
    lines = _without_warnings(result.output)
    if result.exit_code == 2:
        assert lines and lines[0].startswith("Error: "), result.output
        for line in lines:  # every problem names its place: the file it comes from
            assert any(name in line for name in ["suite.yaml", rows[0], *(files or {})]), \
                result.output
    else:
        assert result.exit_code in (0, 1), result.output
        assert lines[0].startswith("run "), result.output


FUZZ = settings(max_examples=100, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_base_suite_and_rows_finish():
    """The undamaged inputs finish a run (else every damaged case below proves nothing)."""
    suite = yaml.safe_dump(SUITE, allow_unicode=True, sort_keys=False).encode()
    for rows in (("out.jsonl", ROWS.encode()), ("out.csv", CSV_ROWS.encode())):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "s.yaml").write_bytes(suite)
            (Path(tmp) / rows[0]).write_bytes(rows[1])
            result = CliRunner().invoke(main, ["eval", f"{tmp}/s.yaml", "--outputs", f"{tmp}/{rows[0]}",
                                               "--db", f"{tmp}/r.duckdb", "--no-progress"])
            assert result.exit_code == 1 and _without_warnings(result.output)[0].startswith(
                "run "), result.output


def _without_warnings(output: str) -> list[str]:
    """The output's lines but the warning said before a run starts (e.g. no judge)."""
    return [line for line in output.strip().splitlines() if not line.startswith("warning: ")]


@FUZZ
@given(st.data())
def test_damaged_suites_finish_or_exit_2(data):
    before = _peak_mb()
    text = yaml.safe_dump(SUITE, allow_unicode=True, sort_keys=False, width=10**6)
    suite = damage_tree(data).encode() if data.draw(st.booleans()) else damage_text(text, data)
    run_cli(suite, ("out.jsonl", ROWS.encode()))
    assert _peak_mb() - before < MEGABYTES


@FUZZ
@given(st.data())
def test_damaged_datasets_finish_or_exit_2(data):
    suite = yaml.safe_dump(SUITE, allow_unicode=True, sort_keys=False).encode()
    run_cli(suite, damage_rows(data))


TESTS_CSV = ("__description,city,__expected,__expected2,__threshold,__metric\n"
             "capital,Paris,contains:{{city}},levenshtein(3):Paris,0.5,tp\n"
             "math,,equals:4,not-contains:five,,fp\n")
CELLS = st.sampled_from(["", "__x", "contains", "regex:(", "similar(abc):x", "1e999", "x",
                         "javascript:1", "grade:ok", "is-json:{", "\x00", "é", "a,b", '"'])


@settings(FUZZ, max_examples=60)
@given(st.data())
def test_damaged_tests_files_finish_or_exit_2(data):
    """`tests: file://t.csv` (promptfoo's __expected columns) with cells, bytes or the
    header damaged: the tests file is named in every line of the error."""
    text = TESTS_CSV
    op = data.draw(st.sampled_from(["cell", "cell", "flip", "truncate", "header"]))
    if op == "cell":
        cells = text.split(",")
        cells[data.draw(st.integers(0, len(cells) - 1))] = data.draw(CELLS)
        raw = ",".join(cells).encode()
    elif op == "header":
        raw = text.replace("city", data.draw(st.sampled_from(["__expected", "__metric", ""])),
                           1).encode()
    else:
        raw = damage_text(text, _Only(data, "flip")) if op == "flip" else \
            text.encode()[:data.draw(st.integers(0, len(text)))]
    rows = '{"test_id": "capital", "output": "Paris"}\n{"test_id": "math", "output": "4"}\n'
    run_cli(b"tests: file://t.csv\n", ("out.jsonl", rows.encode()), {"t.csv": raw})


# The public verbs take any argument cleanly, and a results database moved, copied or
# damaged on disk reads each run it can (issue 40)

def _odd_values():
    import duckdb
    import pandas as pd

    frame = pd.DataFrame({"output": ["Paris", "4"]})
    return st.sampled_from([
        None, 5, -1, 0, 1.5, True, b"r.duckdb", "", ":memory:", "x.parquet", "x.csv",
        "x.jsonl", "notes.txt", "folder", "r.duckdb", [1], {"tests": 5}, {}, frame,
        frame["output"], duckdb.connect(), "2%", "200%", -0.5, float("nan")])


def _call(verb: str, args: list) -> Any:
    import checkllm_batch as cb

    frame = __import__("pandas").DataFrame({"output": ["Paris", "4"]})
    suite = {"tests": [{"assert": [{"type": "contains", "value": "a"}]}]}
    calls = {
        "score": lambda a, b: cb.score(a, b), "score_db": lambda a, b: cb.score(frame, suite, db=a),
        "evaluate": lambda a, b: cb.evaluate(a, b),
        "evaluate_db": lambda a, b: cb.evaluate(suite, frame, db=a, batch_rows=2),
        "batch_rows": lambda a, b: cb.evaluate(suite, frame, batch_rows=a),
        "judge_sample": lambda a, b: cb.evaluate(suite, frame, judge_sample=a),
        "load": lambda a, b: cb.load(a), "get_run": lambda a, b: cb.get_run(a, b),
        "write": lambda a, b: cb.write(cb.evaluate(suite, frame), a),
        "Results": lambda a, b: cb.Results(a), "open_results": lambda a, b: cb.open_results(a),
    }
    return calls[verb](*args)


@settings(FUZZ, max_examples=40)
@given(st.data())
def test_public_verbs_take_any_argument_cleanly(data):
    """Any value for any argument: a result, or a CheckLLMError; never another exception,
    and no file made by a call that was refused."""
    import os

    import checkllm_batch as cb

    verb = data.draw(st.sampled_from(["score", "score_db", "evaluate", "evaluate_db",
                                      "batch_rows", "judge_sample", "load", "get_run", "write",
                                      "Results", "open_results"]))
    args = [data.draw(_odd_values()), data.draw(_odd_values())]
    folder = Path(tempfile.mkdtemp())
    (folder / "notes.txt").write_text("not a database")
    (folder / "folder").mkdir()
    __import__("polars").DataFrame({"output": ["a"]}).write_parquet(folder / "x.parquet")
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        before = sorted(os.listdir(folder))
        try:
            _call(verb, args)
        except cb.CheckLLMError:
            assert sorted(os.listdir(folder)) == before, (verb, args)
    finally:
        os.chdir(cwd)


_TEMPLATE: list[Path] = []


def _template() -> Path:
    """Once per process: a database with a Parquet file's run, a frame's run (text stored)
    and a frame's run with its text in parts, and the cases each read when whole."""
    if _TEMPLATE:
        return _TEMPLATE[0]
    import polars as pl

    import checkllm_batch as cb

    folder = Path(tempfile.mkdtemp()) / "home"
    folder.mkdir()
    suite = {"tests": [{"vars": {"city": "Paris"},
                        "assert": [{"type": "contains", "value": "{{city}}"}]}]}
    rows = pl.DataFrame({"output": ["Paris", "Pärïs ☕", "", None, "4", "x"] * 2,
                         "note": ["a", None, "ü", "", "b", "c"] * 2})
    rows.write_parquet(folder / "o.parquet")
    db = folder / "r.duckdb"
    for outputs, parts in ((str(folder / "o.parquet"), False), (rows, False), (rows, True)):
        cb.evaluate(suite, outputs, db=db, batch_rows=5, text_parts=parts).con.close()
    _TEMPLATE.append(folder)
    return folder


DAMAGE = ["move both", "move db", "copy db", "copy both", "drop folder", "drop run folder",
          "truncate part", "garbage part", "drop part", "stray files", "drop source",
          "rewrite source", "folder is a file"]


@settings(FUZZ, max_examples=25)
@given(st.data())
def test_a_moved_copied_or_damaged_database_reads_each_run_it_can(data):
    """Any sequence of moves, copies and damage: opening it gives warnings only, every
    run's facts, each run's text whole or null (never another run's, never a failure), and
    a new run goes into it."""
    import shutil
    import warnings

    import polars as pl

    import checkllm_batch as cb

    home = Path(tempfile.mkdtemp()) / "home"
    shutil.copytree(_template(), home, symlinks=False)
    with cb.open_results(_template() / "r.duckdb") as con:
        want = {r: con.execute("SELECT list(output ORDER BY case_id) FROM cases WHERE run_id = ?",
                               [r]).fetchall()[0][0]
                for (r,) in con.execute("SELECT run_id FROM runs").fetchall()}
    db = home / "r.duckdb"
    for step in data.draw(st.lists(st.sampled_from(DAMAGE), min_size=1, max_size=3)):
        cases = Path(f"{db}.cases")
        runs = sorted(cases.iterdir()) if cases.is_dir() else []
        if step in ("move both", "move db", "copy db", "copy both"):
            target = home / data.draw(st.sampled_from(["m.duckdb", "sub/ü n.duckdb"]))
            if target == db or target.exists():
                continue
            target.parent.mkdir(exist_ok=True)
            (shutil.copy if "copy" in step else shutil.move)(db, target)
            if "both" in step and cases.is_dir():
                (shutil.copytree if "copy" in step else shutil.move)(cases, f"{target}.cases")
            db = target
        elif step == "drop folder" and cases.exists():
            shutil.rmtree(cases) if cases.is_dir() else cases.unlink()
        elif step == "folder is a file" and not cases.exists():
            cases.write_text("a file")
        elif runs:
            run = data.draw(st.sampled_from(runs))
            parts = sorted(run.glob("*.parquet"))
            if step == "drop run folder":
                shutil.rmtree(run)
            elif step == "stray files":
                pl.DataFrame({"case_id": [0], "output": ["stray"]}).write_parquet(
                    run / "notes.parquet")
                (run / "000000000000.parquet.tmp").write_bytes(b"x")
            elif parts:
                part = data.draw(st.sampled_from(parts))
                if step == "truncate part":
                    part.write_bytes(part.read_bytes()[:30])
                elif step == "garbage part":
                    part.write_bytes(b"PAR1 not really")
                elif step == "drop part":
                    part.unlink()
        if step == "drop source" and (home / "o.parquet").exists():
            (home / "o.parquet").unlink()
        elif step == "rewrite source":
            pl.DataFrame({"output": ["other"] * 3, "note": ["n"] * 3}).write_parquet(
                home / "o.parquet")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        results = cb.Results(db)
        got = {r: results.query("SELECT list(output ORDER BY case_id) AS o FROM cases WHERE "
                                "run_id = ?", [r])["o"].to_list()[0] for r in want}
        counts = results.query("SELECT run_id, count(*) AS n FROM case_rows GROUP BY 1")
    assert all(issubclass(w.category, UserWarning) for w in said)
    assert dict(counts.rows()) == {r: 12 for r in want}  # every run's facts
    named = {r for r in want if any(r in str(w.message) for w in said)}
    for run, outputs in got.items():
        if run not in named:
            assert outputs == want[run], (run, outputs)  # whole where nothing was said
        else:  # its parts that are whole, null for the rest: never other text
            assert all(o is None or o == w for o, w in zip(outputs, want[run]))
    results.con.close()
    frame = pl.DataFrame({"output": ["Paris"]})
    try:
        run = cb.evaluate({"tests": [{"assert": [{"type": "contains", "value": "P"}]}]},
                          frame, db=db)
    except cb.InputError as e:  # only the parts folder's place, made a file, is refused
        raise AssertionError(e)
    assert run.con.execute("SELECT output FROM cases WHERE run_id = ?",
                           [run.run_id]).fetchall() == [("Paris",)]
    run.con.close()
