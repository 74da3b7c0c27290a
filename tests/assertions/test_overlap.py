"""rouge-n, bleu, gleu, meteor: scores to 1e-6 against promptfoo's algorithms (its assertions/ rouge, bleu, gleu, meteor).

Values marked [pf] were checked with promptfoo 0.123.1 run offline on the same inputs.
"""


import pytest
from fixtures.engine import run_assertion
from fixtures.tables.overlap import CASES, METEOR


@pytest.mark.parametrize(("kind", "output", "value", "score"), CASES)
def test_overlap_scores(tmp_path, kind, output, value, score):
    got = run_assertion(tmp_path, {"type": kind, "value": value}, [{"output": output}])[0]
    assert got["score"] == pytest.approx(score, abs=1e-6), got
    threshold = {"bleu": 0.5, "gleu": 0.5, "rouge-n": 0.75, "meteor": 0.5}[kind]
    assert got["status"] == ("pass" if score >= threshold else "fail")


@pytest.mark.parametrize("kind", ["bleu", "gleu", "rouge-n", "meteor"])
def test_negation_flips_threshold_and_reports_one_minus_score(tmp_path, kind):
    rows = [{"output": "the cat sat on the mat"}, {"output": "completely different words"}]
    pos = run_assertion(tmp_path, {"type": kind, "value": "the cat sat on the mat"}, rows)
    neg = run_assertion(tmp_path, {"type": f"not-{kind}", "value": "the cat sat on the mat"}, rows)
    for p, n in zip(pos, neg):
        assert p["pass"] != n["pass"]
        assert n["score"] == pytest.approx(1 - p["score"], abs=1e-9)


def test_rouge_empty_inputs_score_zero(tmp_path):  # [pf]: score 0, a pass at threshold 0
    got = run_assertion(tmp_path, {"type": "rouge-n", "value": "ref", "threshold": 0},
                        [{"output": "   "}, {"output": ""}])
    assert [(g["status"], g["score"]) for g in got] == [("pass", 0.0), ("pass", 0.0)]


def test_templated_reference_per_row(tmp_path):
    rows = [{"output": "a b c d", "ref": "a b c d"}, {"output": "a b c d", "ref": "w x y z"},
            {"output": "x", "ref": None}]
    got = run_assertion(tmp_path, {"type": "bleu", "value": "{{ref}}"}, rows)
    assert [g["score"] for g in got[:2]] == [pytest.approx(1.0), pytest.approx(1e-7)]


def test_repeated_pairs_scored_once_same_result(tmp_path):
    rows = [{"output": "the cat sat"}] * 3 + [{"output": "the dog"}]
    got = run_assertion(tmp_path, {"type": "bleu", "value": "the cat sat"}, rows)
    alone = run_assertion(tmp_path, {"type": "bleu", "value": "the cat sat"}, rows[3:])
    assert [g["score"] for g in got] == [1.0, 1.0, 1.0, alone[0]["score"]]
    assert alone[0]["score"] < 0.5  # "the dog" shares one word with the reference


@pytest.mark.parametrize(("output", "reference"), METEOR)
def test_meteor_uses_stems_and_synonyms(tmp_path, output, reference):
    from fixtures.meteor_reference import single_meteor

    from checkllm_batch.assertions.parsers.meteor import synonyms

    assert "true_cat" not in synonyms("cat") and "cat" in synonyms("cat")
    exact_only = sum(w in reference.lower().split() for w in output.lower().split())
    got = run_assertion(tmp_path, {"type": "meteor", "value": reference}, [{"output": output}])[0]
    assert got["score"] == pytest.approx(single_meteor(output, reference, 0.9, 3.0, 0.5))
    assert got["score"] > 0 and exact_only < len(output.split())


def test_meteor_list_of_templates_scores_each_rows_references(tmp_path):
    """A per-row list value (["{{a}}", "{{b}}"]) is each row's references, as the same list
    written literally: not one reference holding the list's JSON text."""
    rows = [{"output": "the cat sat on the mat", "a": "a dog barked", "b": "the cat sat"},
            {"output": "a dog barked loudly", "a": "a dog barked", "b": "the cat sat"}]
    templated = run_assertion(tmp_path, {"type": "meteor", "value": ["{{a}}", "{{b}}"]}, rows)
    literal = run_assertion(tmp_path, {"type": "meteor", "value": ["a dog barked",
                                                                   "the cat sat"]}, rows)
    assert [r["score"] for r in templated] == pytest.approx([r["score"] for r in literal])


def test_meteor_synonym_match():
    from fixtures.meteor_reference import single_meteor

    # "car" and "auto" share a WordNet synset: both words align, one chunk
    assert single_meteor("the car", "the auto", 0.9, 3, 0.5) == pytest.approx(
        (1 - 0.5 * (1 / 2) ** 3) * 1.0)
    # as in promptfoo, the synonym stage sees stems: "automobile" -> "automobil" misses
    assert single_meteor("the car", "the automobile", 0.9, 3, 0.5) == pytest.approx(0.25)


def test_meteor_without_wordnet_is_an_error(tmp_path, monkeypatch):
    from checkllm_batch.assertions.parsers import meteor

    monkeypatch.setattr(meteor, "WORDNET_DIRS", ())
    monkeypatch.setenv("WORDNET_DIR", str(tmp_path))
    got = run_assertion(tmp_path, {"type": "meteor", "value": "x y"}, [{"output": "x y"}])[0]
    assert got["status"] == "error" and "wordnet-base" in got["reason"]


def test_vectorised_meteor_matches_the_reference_algorithm():
    """The join-based alignment gives single_meteor's score (a direct port of promptfoo's
    greedy loops) on random sentences rich in repeats, stems and WordNet synonyms."""
    import random

    import polars as pl
    from fixtures.meteor_reference import single_meteor

    from checkllm_batch.assertions.parsers.meteor import meteor_scores

    words = ("the car auto automobile cats cat sitting sat sit big large great quick fast "
             "rapid mat rug. The. a  ünï").split(" ")
    rng = random.Random(3)
    rows = []
    for i in range(300):
        out = " ".join(rng.choice(words) for _ in range(rng.randint(1, 12)))
        refs = [" ".join(rng.choice(words) for _ in range(rng.randint(1, 12)))
                for _ in range(rng.randint(1, 3))]
        rows.append((i, out, refs))
    pairs = pl.DataFrame(rows, schema={"id": pl.UInt32, "a": pl.String,
                                       "b": pl.List(pl.String)}, orient="row")
    got = dict(meteor_scores(pairs, 0.9, 3.0, 0.5).iter_rows())
    for i, out, refs in rows:
        want = max(single_meteor(out, r, 0.9, 3.0, 0.5) for r in refs)
        assert got[i] == pytest.approx(want, abs=1e-9), (out, refs)


# natural's PorterStemmer (promptfoo's), run on these words with node: our stems must agree
NATURAL_STEMS = [("cats", "cat"), ("sitting", "sit"), ("apology", "apolog"), ("as", "as"),
                 ("cosmology", "cosmolog"), ("automobile", "automobil"), ("happily", "happili"),
                 ("Running", "run"), ("generalization", "gener"), ("résumés", "résumé"),
                 ("añoranzas", "añoranza"), ("walkéd", "walkéd")]


@pytest.mark.parametrize(("word", "stemmed"), NATURAL_STEMS)
def test_stems_like_natural(word, stemmed):
    from checkllm_batch.assertions.parsers.meteor import stem

    assert stem(word) == stemmed


# js-rouge 3.2.3's treeBankTokenize on the lower-cased text, as promptfoo 0.123.1's rouge-n
# calls it: the whole text at once, no sentence segmentation (only the last period splits
# off). Expected tokens were printed by js-rouge itself (node, the offline kit's copy).
TREEBANK = [
    ('It rained. then it stopped.',
     ['it', 'rained.', 'then', 'it', 'stopped', '.']),
    ('I met Dr. Smith today. He said hi.',
     ['i', 'met', 'dr.', 'smith', 'today.', 'he', 'said', 'hi', '.']),
    ('Go to the U.S. Army at 5 p.m. Then we left.',
     ['go', 'to', 'the', 'u.s.', 'army', 'at', '5', 'p.m.', 'then', 'we', 'left', '.']),
    ('He paid $1,000. then left at 10:30.',
     ['he', 'paid', '$', '1,000.', 'then', 'left', 'at', '10:30', '.']),
    ('He said "Stop." Then left.',
     ['he', 'said', '``', 'stop.', "''", 'then', 'left', '.']),
    ('The result is 42. "Quoted text," she said.',
     ['the', 'result', 'is', '42.', '``', 'quoted', 'text', ',', "''", 'she', 'said', '.']),
    ('say "hello " and "bye"',
     ['say', '``', 'hello', "''", 'and', '``', 'bye', "''"]),
    ('a "b" c "d',
     ['a', '``', 'b', "''", 'c', '``', 'd']),
    ('("x")',
     ['(', '``', 'x', "''", ')']),
    ('end "',
     ['end', '``']),
    ('Item (see above). Next.',
     ['item', '(', 'see', 'above', ')', '.', 'next', '.']),
    ('1. First item\n2. Second item',
     ['1.', 'first', 'item', '2.', 'second', 'item']),
    ("It's James' book",
     ['it', "'s", 'james', "'", 'book']),
    ('cannot cannot wanna go',
     ['can', 'not', 'can', 'not', 'wan', 'na', 'go']),
    ("I don't know...",
     ['i', 'do', "n't", 'know', '...']),
    ('end with U.S.',
     ['end', 'with', 'u.s.']),
    ('end with a.b.',
     ['end', 'with', 'a.b.']),
    ('x@y.com #tag; a--b',
     ['x', '@', 'y.com', '#', 'tag', ';', 'a', '--', 'b']),
    ('""',
     ['``', "''"]),
    ('a\u3000b\ufeffc',
     ['a', 'b', 'c']),
    ('Wait?! No.',
     ['wait', '?', '!', 'no', '.']),
    ('word.)',
     ['word', '.', ')']),
]


@pytest.mark.parametrize(("text", "tokens"), TREEBANK)
def test_rouge_tokens_follow_js_rouge(text, tokens):
    import polars as pl

    from checkllm_batch.assertions.overlap import rouge_tokens

    got = pl.DataFrame({"t": [text]}).select(x=rouge_tokens(pl.col("t")))["x"][0].to_list()
    assert got == tokens


@pytest.mark.parametrize("max_n", [1, 4])
def test_shared_and_own_reference_matching_count_alike(max_n):
    """The two ways of counting clipped n-gram matches (references shared by many rows are
    joined; each row's own reference is matched by a sort, or for unigrams alone (rouge-n)
    by a group-by) agree, repeats included."""
    import polars as pl

    from checkllm_batch.assertions.overlap import bleu_tokens, clipped_matches

    outputs = ["the cat the cat sat", "a b a b a b", "", "one two three", "x y z", "ü ü b"]
    references = [["the cat sat the"], ["a b a", "b a b b"], ["x"], [], ["x y z", "x y z"],
                  [" ", "Ü b ü ü"]]  # a reference without words
    rows = pl.DataFrame({"a": outputs, "b": references}).with_row_index("id")
    cand = rows.lazy().select("id", tok=bleu_tokens(pl.col("a")))
    refs = (rows.lazy().select("id", r="b").explode("r").drop_nulls("r")
            .with_columns(ref=pl.int_range(pl.len()).over("id"),
                          rid=pl.col("r").rank("dense"), tok=bleu_tokens(pl.col("r"))))
    counts = ["c", "r", *(f"m{n}" for n in range(1, max_n + 1))]
    shared, own = (clipped_matches(cand, refs, max_n, shared=way).collect().sort("id", "ref")
                   .select("id", "ref", *counts) for way in (True, False))
    assert shared.equals(own)
    expected = {"c": 6, "r": 4, "m1": 4, "m2": 2, "m3": 1, "m4": 0}  # "a b a b a b", "b a b b"
    assert shared.filter(id=1, ref=1).select(counts).to_dicts() == [
        {k: expected[k] for k in counts}]
