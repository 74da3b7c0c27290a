"""Text matching types: promptfoo's verdicts (its src/assertions/ modules)."""

import pytest

PASS, FAIL = ("pass", 1.0), ("fail", 0.0)

CASES = [
    # (assertion, output, expected)
    ({"type": "contains", "value": "energy"}, "chemical energy.", PASS),
    ({"type": "contains", "value": "Energy"}, "chemical energy.", FAIL),
    ({"type": "contains", "value": "énergie"}, "l'énergie solaire", PASS),
    ({"type": "contains", "value": "x"}, "", FAIL),
    ({"type": "contains", "value": 42}, "answer: 42", PASS),
    ({"type": "not-contains", "value": "TODO"}, "done", PASS),
    ({"type": "not-contains", "value": "TODO"}, "a TODO left", FAIL),
    ({"type": "icontains", "value": "PARIS"}, "I love paris", PASS),
    ({"type": "icontains", "value": "straße"}, "STRASSE", FAIL),
    ({"type": "not-icontains", "value": "as an ai"}, "As an AI, I think", FAIL),
    ({"type": "contains-any", "value": ["cat", "dog"]}, "a dog", PASS),
    ({"type": "contains-any", "value": ["cat", "dog"]}, "a bird", FAIL),
    ({"type": "contains-any", "value": "cat, dog"}, "hot dog", PASS),
    ({"type": "contains-any", "value": '"a, b", c'}, "x a, b y", PASS),
    ({"type": "contains-any", "value": '"a, b", c'}, "a only", FAIL),
    ({"type": "not-contains-any", "value": ["cat", "dog"]}, "a bird", PASS),
    ({"type": "contains-all", "value": ["cat", "dog"]}, "cat and dog", PASS),
    ({"type": "contains-all", "value": ["cat", "dog"]}, "cat only", FAIL),
    ({"type": "not-contains-all", "value": ["cat", "dog"]}, "cat only", PASS),  # "not all"
    ({"type": "not-contains-all", "value": ["cat", "dog"]}, "cat and dog", FAIL),
    ({"type": "icontains-any", "value": ["PARIS", "lyon"]}, "Lyon!", PASS),
    ({"type": "icontains-all", "value": "Paris, LYON"}, "paris and lyon", PASS),
    ({"type": "icontains-all", "value": "Paris, LYON"}, "paris", FAIL),
    ({"type": "starts-with", "value": "Yes"}, "Yes, indeed", PASS),
    ({"type": "starts-with", "value": "Yes"}, " Yes", FAIL),  # no trimming
    ({"type": "not-starts-with", "value": "Yes"}, "No", PASS),
    ({"type": "equals", "value": "Hello"}, "Hello", PASS),
    ({"type": "equals", "value": "Hello"}, "Hello ", FAIL),  # exact, no trim
    ({"type": "equals", "value": "hello"}, "Hello", FAIL),
    ({"type": "equals", "value": 1.0}, "1", PASS),  # JS String(1.0) == "1"
    ({"type": "equals", "value": True}, "true", PASS),
    ({"type": "equals", "value": '{"a":1}'}, '{"a": 1}', FAIL),  # a string value is a string
    ({"type": "equals", "value": {"a": 1, "b": [1, 2]}}, '{"b": [1, 2], "a": 1}', PASS),
    ({"type": "equals", "value": {"a": 1}}, '{"a": 1.0}', PASS),
    ({"type": "equals", "value": {"a": 1}}, '{"a": true}', FAIL),  # strict: true != 1
    ({"type": "equals", "value": {"a": 1}}, "not json", FAIL),
    ({"type": "equals", "value": [1, 2]}, "[2, 1]", FAIL),
    ({"type": "equals", "value": {"z": -0.0}}, '{"z": -0}', PASS),  # JSON.parse keeps -0
    ({"type": "equals", "value": {"z": 0}}, '{"z": -0}', FAIL),  # deep equality: -0 is not 0
    ({"type": "equals", "value": {"s": "-0"}}, '{"s": "-0"}', PASS),
    ({"type": "not-equals", "value": "Hello"}, "Bye", PASS),
    ({"type": "equals", "value": "日本"}, "日本", PASS),
    ({"type": "regex", "value": "\\b[Pp]hoto"}, "Photosynthesis", PASS),
    ({"type": "regex", "value": "^\\d+$"}, "123", PASS),
    ({"type": "regex", "value": "^\\d+$"}, "123\n", FAIL),  # JS $: end of input only
    ({"type": "regex", "value": "^\\d+$"}, "١٢٣", FAIL),  # JS \d is ASCII
    ({"type": "regex", "value": "a.b"}, "a\nb", FAIL),  # JS . excludes newlines
    ({"type": "regex", "value": "a.b"}, "a\u2028b", FAIL),
    ({"type": "regex", "value": "\\bcafé\\b"}, "un café", FAIL),  # JS \b is ASCII: é is not \w
    ({"type": "regex", "value": "x{2}"}, "xx", PASS),
    ({"type": "regex", "value": "a{"}, "a{", PASS),  # a literal brace in JS
    ({"type": "regex", "value": "foo(?=bar)"}, "foobar", PASS),  # lookahead: fallback engine
    ({"type": "regex", "value": "foo(?=bar)"}, "foobaz", FAIL),
    ({"type": "regex", "value": "(?<!x)y"}, "xy", FAIL),  # lookbehind
    ({"type": "regex", "value": "(a)\\1"}, "aa", PASS),  # backreference
    # a non-ASCII digit after `\` is the character itself (node: /(a)\²/.test("a²") is true,
    # /(a)(b)(c)\٣/.test("abc٣") is true); `\²` used to crash the translation
    ({"type": "regex", "value": "(a)\\²"}, "a²", PASS),
    ({"type": "regex", "value": "(a)(b)(c)\\٣"}, "abc٣", PASS),
    ({"type": "regex", "value": "(a)(b)(c)\\٣"}, "abcc", FAIL),
    ({"type": "not-regex", "value": "error"}, "all good", PASS),
    ({"type": "regex", "value": "[^]"}, "\n", PASS),
    # plain text (no metacharacter): RegExp.test is a substring search, case and all
    ({"type": "regex", "value": "in Paris, France"}, "Born in Paris, France.", PASS),
    ({"type": "regex", "value": "paris"}, "Paris", FAIL),
    ({"type": "regex", "value": "a-b/c = 'd'"}, "x a-b/c = 'd' y", PASS),
    ({"type": "regex", "value": "ok 😀"}, "all ok 😀!", PASS),
    ({"type": "regex", "value": "日本"}, "日 本", FAIL),
    ({"type": "not-regex", "value": "error"}, "an error", FAIL),
]


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
