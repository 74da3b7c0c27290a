"""The CSV `__expected` convention (promptfoo's assertionFromString, src/assertions/index.ts): prefixes, CSV default thresholds, trimming."""

from __future__ import annotations

import pytest
from fixtures.suites import write_suite

import checkllm_batch as cb
from checkllm_batch.assertions.reading import read_test_file
from checkllm_batch.assertions.reading.cells import assertion_from_string

# (trimmed cell, assertion) — promptfoo's assertionFromString: prefixes, then `[not-]type[(N)][:value]`
CELLS = [
    ("javascript: output.length > 3", {"type": "javascript", "value": "output.length > 3"}),
    ("fn:output === 'x'", {"type": "javascript", "value": "output === 'x'"}),
    ("eval: 1", {"type": "javascript", "value": "1"}),
    ("file://check.js", {"type": "javascript", "value": "file://check.js"}),
    ("grade: be polite", {"type": "llm-rubric", "value": " be polite"}),  # rest not trimmed
    ("llm-rubric:be polite", {"type": "llm-rubric", "value": "be polite"}),
    ("python: 'a' in output", {"type": "python", "value": "'a' in output"}),
    ("python: file://check.py", {"type": "python", "value": "file://check.py"}),
    ("file://check.py:fn", {"type": "python", "value": "file://check.py:fn"}),  # deviation
    ("contains: Paris", {"type": "contains", "value": "Paris"}),  # trimmed (issue #3861)
    ("not-icontains:error", {"type": "not-icontains", "value": "error"}),
    ("contains-all:a, b ,c", {"type": "contains-all", "value": ["a", "b", "c"]}),
    ('icontains-any:"a,b", c', {"type": "icontains-any", "value": ["a,b", "c"]}),  # [N] quotes
    ("is-json", {"type": "is-json"}),
    ('is-json: {"type": "object"}', {"type": "is-json", "value": ' {"type": "object"}'}),
    ("contains-json:{}", {"type": "contains-json", "value": "{}"}),
    ("similar:Hello", {"type": "similar", "value": "Hello", "threshold": 0.8}),
    ("similar(0.6):Hello", {"type": "similar", "value": "Hello", "threshold": 0.6}),
    ("levenshtein:foo", {"type": "levenshtein", "value": "foo", "threshold": 0.75}),
    ("levenshtein(5):foo", {"type": "levenshtein", "value": "foo", "threshold": 5.0}),
    ("starts-with: Yes", {"type": "starts-with", "value": "Yes", "threshold": 0.75}),
    ("latency:", {"type": "latency", "value": "", "threshold": 0.75}),
    ("cost", {"type": "cost", "threshold": 0.75}),
    ("rouge-n:the cat", {"type": "rouge-n", "value": "the cat", "threshold": 0.75}),
    ("answer-relevance", {"type": "answer-relevance", "threshold": 0.75}),
    ("perplexity-score(0.3)", {"type": "perplexity-score", "threshold": 0.3}),
    ("classifier:positive", {"type": "classifier", "value": "positive", "threshold": 0.75}),
    ("regex:^\\d+$", {"type": "regex", "value": "^\\d+$"}),
    ("equals:exact", {"type": "equals", "value": "exact"}),
    ("Paris", {"type": "equals", "value": "Paris"}),  # no known prefix: equals
    ("grade(0.7): x", {"type": "equals", "value": "grade(0.7): x"}),  # no (N) for prefixes
    ("contains:a:b", {"type": "contains", "value": "a:b"}),
    ("contains:Ünïcödé ✓", {"type": "contains", "value": "Ünïcödé ✓"}),
    ("expression:length(output) > 3", {"type": "expression", "value": "length(output) > 3"}),
]


@pytest.mark.parametrize("cell,expected", CELLS)
def test_assertion_from_string(cell, expected):
    assert assertion_from_string(cell) == expected


CSV = (
    "question,__expected,__expected2,__expected3,__threshold,__description,__metric,"
    "__metadata:topic,__metadata:tags[],__prefix,__suffix,__config:__expected2:threshold,"
    "_expected\n"
    'capital?,  contains: Paris  ,,"icontains-any:a,b",0,geo row,acc,geo,"x, y\\, z",P:, :S,0.4,v\n'
    ",,,, 0.5 ,,,,,,,,\n"
)


def test_csv_columns(tmp_path):
    path = tmp_path / "tests.csv"
    path.write_text(CSV, encoding="utf-8")
    first, second = read_test_file(path)
    assert first["vars"] == {"question": "capital?", "_expected": "v"}
    assert first["assert"] == [  # the empty __expected2 cell is skipped: __expected2's
        {"type": "contains", "value": "Paris", "metric": "acc"},  # threshold indexes the
        {"type": "icontains-any", "value": ["a", "b"], "metric": "acc", "threshold": 0.4}]  # 2nd
    assert first["threshold"] == 0  # promptfoo 0.123.1 keeps a 0 (kit: 0.5 >= 0 passes)
    assert first["description"] == "geo row"
    assert first["metadata"] == {"topic": "geo", "tags": ["x", "y, z"]}
    assert first["options"] == {"prefix": "P:", "suffix": " :S"}
    assert second["threshold"] == 0.5
    assert second["description"] == "Row #2" and second["assert"] == []


@pytest.mark.parametrize("cell", ["abc", "0.5abc", "Infinity", "1,5", "0x1", "\u0661"])
def test_csv_threshold_that_is_not_a_number_is_a_config_error(tmp_path, cell):
    """promptfoo ignores such a __threshold (its parseFiniteNumber); a silent 0.5 for
    "0.5abc", as parseFloat reads it, would grade differently: refused here."""
    path = tmp_path / "tests.csv"
    path.write_text(f'q,__threshold\nx,"{cell}"\n', encoding="utf-8")
    with pytest.raises(cb.ConfigError, match="__threshold must be a number"):
        read_test_file(path)


def test_csv_suite_end_to_end(tmp_path):
    (tmp_path / "tests.csv").write_text(
        "__expected,__expected2,__providerOutput,__description\n"
        "contains: Paris ,not-contains:Berlin,The capital is Paris,a\n"
        "javascript: output.length > 3,,x,b\n", encoding="utf-8")
    with pytest.raises(cb.ConfigError, match="as `python`"):
        cb.load(write_suite(tmp_path, {"tests": "file://tests.csv"}))
    (tmp_path / "tests.csv").write_text(
        "__expected,__expected2,__providerOutput,__description\n"
        "contains: Paris ,not-contains:Berlin,The capital is Paris,a\n"
        "python: len(output) > 3,,xy,b\n", encoding="utf-8")
    run = cb.evaluate(cb.load(write_suite(tmp_path, {"tests": "file://tests.csv"})))
    assert run.test_results["status"].to_list() == ["pass", "fail"]


def test_same_verdicts_as_promptfoo_0_123_1(tmp_path):
    """This CSV gave, in promptfoo 0.123.1 offline: row 1 fails with score 0.75
    (levenshtein over its 0.9 threshold), row 2 passes with score 1."""
    (tmp_path / "t.csv").write_text(
        "__providerOutput,__expected1,__expected2,__expected3,__expected4,"
        "__config:__expected2:threshold\n"
        'The capital is Paris,  contains: Paris  ,levenshtein:The capital is Pari,'
        '"icontains-any:""x,y"", paris",starts-with:The,0.9\n'
        "The capital is Paris,contains:Paris,levenshtein:The capital is Pari,"
        "python: 'Paris' in output,equals:The capital is Paris,2\n", encoding="utf-8")
    run = cb.evaluate(cb.load(write_suite(tmp_path, {"tests": "file://t.csv"})))
    assert run.assertion_results.select("case_id", "type", "status", "score").rows() == [
        (0, "contains", "pass", 1.0), (0, "levenshtein", "fail", 0.0),
        (0, "icontains-any", "pass", 1.0), (0, "starts-with", "pass", 1.0),
        (1, "contains", "pass", 1.0), (1, "levenshtein", "pass", 1.0),
        (1, "python", "pass", 1.0), (1, "equals", "pass", 1.0)]
    assert run.test_results.select("status", "score").rows() == [("fail", 0.75), ("pass", 1.0)]


# (cell naming a promptfoo type we do not register, the parse error) — such a type declares no
# CSV rule (assertions/reading/cells.py reads the rules from the registry): the suite fails to load anyway
UNREGISTERED_CELLS = [
    ("classifier:positive", '"classifier" cannot run here'),
    ("not-classifier(0.5):négatif ✓", '"classifier" cannot run here'),
    ("moderation", '"moderation" cannot run here'),
    ("guardrails:", '"guardrails" cannot run here'),
    ("pi:be kind", '"pi" cannot run here'),
    ("search-rubric: cites a source", '"search-rubric" cannot run here'),
    ("ruby:output.size > 3", '"ruby" cannot run here'),
    ("javascript:output.length > 3", '"javascript" cannot run here'),
    ("human", '"human" cannot run here'),
    ("agent-rubric:uses the tool", '"agent-rubric" cannot run here'),
    ("trace-span-count(2):x", '"trace-span-count" cannot run here'),
    ("not-trace-error-spans", '"trace-error-spans" cannot run here'),
    ("trace-span-duration:", '"trace-span-duration" cannot run here'),
    *((f"trajectory:{t}:x", f'"trajectory:{t}" cannot run here') for t in (
        "goal-success", "step-count", "tool-args-match", "tool-sequence", "tool-used")),
]


@pytest.mark.parametrize("cell,message", UNREGISTERED_CELLS)
def test_a_cell_naming_a_type_we_do_not_register_fails_to_load(tmp_path, cell, message):
    (tmp_path / "t.csv").write_text(f'__expected,__providerOutput\n"{cell}",x\n', encoding="utf-8")
    with pytest.raises(cb.ConfigError, match=message):
        cb.load(write_suite(tmp_path, {"tests": "file://t.csv"}))


def test_the_table_names_every_promptfoo_type_we_do_not_register():
    from checkllm_batch.assertions.reading.cells import PROMPTFOO_TYPES
    from checkllm_batch.assertions.registry import known_names

    named = {message.split('"')[1] for _, message in UNREGISTERED_CELLS}
    assert named == set(PROMPTFOO_TYPES) - set(known_names())


# (output, __expected cell, promptfoo 0.123.1's test status and score), from the offline kit
# (a CSV of these rows graded by its verbatim provider, 2026-11-24). promptfoo's cell regex
# takes a threshold only as `(digits[.digits])` (else the whole cell is an `equals`), keeps it
# only for the types with a CSV threshold, and leaves contains-any/all without a value when
# nothing follows the colon.
KIT_CELLS = [
    ("the cat sat on the mat", "gleu(0.9):the cat sat on a mat", "pass", 0.6111111111111112),
    ("the cat sat on", "bleu(0.9):the cat sat", "fail", 0.012574334296829352),
    ("x", "contains-any(0.5):x", "pass", 1.0),
    ("abc", "regex(0.5):b", "pass", 1.0),
    ("abc", "not-regex(0.5):b", "fail", 0.0),
    ("x", "contains-all(0.5)", "error", None),
    ("x", "icontains-any:", "error", None),
    ("paris", "rouge-n(.5): paris", "fail", 0.0),
    ("levenshtein(1.):x", "levenshtein(1.):x", "pass", 1.0),
    ("abc", "levenshtein(1):abd", "pass", 1.0),
    ("abc", "levenshtein(1.5):abd", "pass", 1.0),
]


@pytest.mark.parametrize("output,cell,status,score", KIT_CELLS)
def test_cells_read_as_promptfoo_reads_them(tmp_path, output, cell, status, score):
    (tmp_path / "t.csv").write_text(f'__providerOutput,__expected\n"{output}","{cell}"\n',
                                    encoding="utf-8")
    try:
        run = cb.evaluate(cb.load(write_suite(tmp_path, {"tests": "file://t.csv"})))
    except cb.ConfigError:  # refused when the suite loads: an error, as promptfoo's
        assert status == "error"
        return
    got = run.test_results.row(0, named=True)
    assert (got["status"], got["score"]) == (status, pytest.approx(score) if score else score)


def test_a_test_threshold_of_zero_is_kept(tmp_path):
    """promptfoo 0.123.1 (kit): one of two assertions failing, `__threshold` 0: the test
    passes with score 0.5 ("Aggregate score 0.50 ≥ 0 threshold")."""
    (tmp_path / "t.csv").write_text("__providerOutput,__expected1,__expected2,__threshold\n"
                                    "abc,contains:a,contains:z,0\n", encoding="utf-8")
    run = cb.evaluate(cb.load(write_suite(tmp_path, {"tests": "file://t.csv"})))
    assert run.test_results.select("status", "score").rows() == [("pass", 0.5)]
