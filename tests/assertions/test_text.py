"""Text matching types, word-count, finish-reason and is-refusal (assertions/text.py):
promptfoo's verdicts (its src/assertions/ modules)."""

import pytest
from fixtures.engine import run_assertion
from fixtures.tables.text import CASES, ROW_CASES


@pytest.mark.parametrize("assertion,output,expected", CASES)
def test_text_verdicts(check, assertion, output, expected):
    assert check(assertion, output) == expected


NEEDS_TEXT = ["contains", "icontains", "starts-with", "regex", "equals", "contains-any",
              "not-contains", "not-regex"]


@pytest.mark.parametrize("type_", NEEDS_TEXT)
def test_null_output_fails_with_reason(tmp_path, type_):
    from conftest import run

    r = run(tmp_path, {"defaultTest": {"assert": [{"type": type_, "value": "x"}]}},
            [{"output": None}, {"output": "x"}])
    rows = r.assertion_results.sort("case_id")
    assert rows["status"][0] == "fail"
    assert rows["reason"][0] == "output is null"
    assert rows["status"][1] in ("pass", "fail")  # the other row is still evaluated
    assert r.test_results.height == 2


def test_per_row_values_from_vars(tmp_path):
    from conftest import verdicts

    got = verdicts(tmp_path, {"type": "contains", "value": "{{expected}}"},
                   ["Paris is big", "Rome", "Lyon", None], expected=["Paris", "Milan", None, "x"])
    # a null var renders as "" (Nunjucks); promptfoo errors on an empty contains value
    # (tests/promptfoo_kit/per-row.jsonl)
    assert got == [("pass", 1.0), ("fail", 0.0), ("error", None), ("fail", 0.0)]


def test_template_mixed_with_text(tmp_path):
    from conftest import verdicts

    got = verdicts(tmp_path, {"type": "equals", "value": "Answer: {{ a }}!"},
                   ["Answer: 4!", "Answer: 5!"], a=["4", "4"])
    assert got == [("pass", 1.0), ("fail", 0.0)]


def test_regex_per_row_patterns_run_per_distinct_value(tmp_path):
    from conftest import verdicts

    got = verdicts(tmp_path, {"type": "regex", "value": "{{p}}"}, ["abc", "abc", "abc"],
                   p=["^a", "^b", "("])
    assert got[:2] == [("pass", 1.0), ("fail", 0.0)]
    assert got[2] == ("error", None)  # an invalid per-row pattern is an error on that row


def test_failure_reasons_say_what_was_expected(tmp_path):
    from conftest import run

    r = run(tmp_path, {"defaultTest": {"assert": [
        {"type": "contains", "value": "Paris"}, {"type": "not-contains", "value": "Rome"},
        {"type": "contains-all", "value": ["a", "b", "c"]}]}}, [{"output": "Rome a"}])
    reasons = r.assertion_results.sort("assertion_index")["reason"].to_list()
    assert reasons == ['Expected output to contain "Paris"',
                       'Expected output to not contain "Rome"',
                       'Expected output to contain all of "a", "b", "c": missing: b, c']


ITEM_TEXTS = [  # per-row list values split in Polars must give split_items' items
    "cat, dog", " cat ,,, dog ,", "a b,c", "", " , ", ",", "one", "über, 東京",
    "a\ufeff, b\x85", "\u3000x\u2028,\ty\n", "emoji 🙂, x", 'quoted "a, b", c', None,
]


@pytest.mark.parametrize("text", ITEM_TEXTS)
def test_plain_items_split_as_split_items(text):
    import polars as pl

    from checkllm_batch.assertions.text import plain_items, split_items
    got = pl.select(plain_items(pl.lit(text, pl.String))).item()
    expected = None if text is None or '"' in text else split_items(text) or None
    assert (got.to_list() if got is not None else None) == expected


LISTINGS = [  # (items, the reason's listing)
    (["a", "b"], '"a", "b"'),
    ([], ""),
    ([""], '""'),
    (['say "hi"', "back\\slash", "two\nlines\r\tx"],
     '"say \\"hi\\"", "back\\\\slash", "two\\nlines\\r\\tx"'),
    (["élan", "🙂"], '"élan", "🙂"'),
    (None, None),
]


@pytest.mark.parametrize("items,expected", LISTINGS)
def test_listing_quotes_items_as_json_strings(items, expected):
    import polars as pl

    from checkllm_batch.assertions.text import listing
    column = pl.lit(pl.Series([items], dtype=pl.List(pl.String)))
    assert pl.select(listing(column)).item() == expected


@pytest.mark.parametrize(("assertion", "row", "status", "score"), ROW_CASES)
def test_row_case_verdicts(tmp_path, assertion, row, status, score):
    got = run_assertion(tmp_path, assertion, [row])[0]
    assert got["status"] == status, got
    assert got["score"] == (pytest.approx(score, abs=1e-6) if score is not None else None)


def test_json_output_is_an_assumed_refusal_scoring_zero(tmp_path):
    # promptfoo 0.123.1: a non-text output passes is-refusal and fails not-is-refusal, score 0
    for kind, status in (("is-refusal", "pass"), ("not-is-refusal", "fail")):
        got = run_assertion(tmp_path, {"type": kind}, [{"output": {"tool": "x"}}])[0]
        assert (got["status"], got["score"]) == (status, 0.0)


@pytest.mark.parametrize("value", [{"min": 5, "max": 2}, "many", {"least": 1}, [1]])
def test_word_count_bad_values_fail_at_parse_time(tmp_path, value):
    from checkllm_batch.errors import ConfigError

    with pytest.raises(ConfigError):
        run_assertion(tmp_path, {"type": "word-count", "value": value}, [{"output": "a"}])
