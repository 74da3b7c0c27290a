"""The vectorised path has no row loops. Python callbacks over rows (`map_batches`,
`map_elements`, `map_rows`, `iter_rows`, loops over `to_list()` / `to_dicts()` / `rows()`)
are found on the syntax tree, and are allowed only in the modules that run a library (or
user code) over the distinct values of a batch."""

import ast

import pytest
from conftest import ROOT

CALLBACKS = {"map_batches", "map_elements", "map_rows", "iter_rows", "apply"}
MATERIALISE = {"to_list", "to_dicts", "rows", "iter_rows"}
ALLOWED = {  # module: the library it runs over distinct values
    "assertions/batch/distinct.py": "the one over-distinct helper",
    "assertions/batch/values.py": "type compilers (regex, schema, lists) once per distinct value",
    "js/template.py": "jinja2, once per distinct vars",
    "assertions/distance.py": "rapidfuzz over the batch",
    "assertions/overlap.py": "js-rouge / BLEU tokenisation; METEOR (WordNet, Porter stemmer)",
    "assertions/custom/__init__.py": "user Python code, DuckDB / Polars SQL over the batch, one POST per "
                            "distinct case",
    "assertions/custom/scripts.py": "user Python code's results, read once per distinct value",
    "assertions/text.py": "per-row item lists exploded and regrouped",
    "assertions/tools.py": "orjson over distinct tool_calls values",
    "evaluate/judging/hook.py": "one group of requests per test's judge settings",
    "evaluate/judging/decide.py": "select-best / max-score over each test's group of cases",
}
SCOPE = ("assertions", "evaluate", "judge", "suites", "js", "load", "store", "metrics")  # the pipeline


def row_loops(source: str) -> list[int]:
    """Lines of `source` holding a Python callback over rows or a loop over materialised rows."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in CALLBACKS:
            lines.append(node.lineno)
        iters = ([node.iter] if isinstance(node, ast.For) else
                 [g.iter for g in node.generators] if isinstance(
                     node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)) else [])
        for it in iters:
            if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) \
                    and it.func.attr in MATERIALISE:
                lines.append(node.lineno)
    return sorted(set(lines))


@pytest.mark.parametrize("snippet,found", [
    ("s.map_elements(f)", True),
    ("e.map_batches(f, return_dtype=t)", True),
    ("for v in series.to_list():\n    f(v)", True),
    ("[f(r) for r in df.iter_rows()]", True),
    ("{k: f(v) for k, v in frame.to_dicts()}", True),
    ("pl.col('a').str.contains('x')", False),
    ("for name in names:\n    pass", False),
])
def test_the_guard_finds_row_loops(snippet, found):
    assert bool(row_loops(snippet)) is found


def test_no_row_loops_outside_the_allowed_modules():
    offenders = []
    for folder in SCOPE:
        for path in (ROOT / "checkllm_batch" / folder).rglob("*.py"):
            name = path.relative_to(ROOT / "checkllm_batch").as_posix()
            if name in ALLOWED:
                continue
            offenders += [f"{name}:{n}" for n in row_loops(path.read_text(encoding="utf-8"))]
    assert not offenders, "row loops outside the allowed modules:\n" + "\n".join(offenders)


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_each_allowed_module_still_needs_it(name):
    assert row_loops((ROOT / "checkllm_batch" / name).read_text(encoding="utf-8")), \
        f"{name} has no row loop left: take it off the allowed list"
