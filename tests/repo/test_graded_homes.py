"""Where a model-graded type lives: adding one touches its module in assertions/graded/ (the
type, its default prompt, its reply parser), its test table and its docs section, and
nothing in judge/ (the transport) or evaluate/judging/ (how a batch reaches the judge)."""

import ast
import importlib
from pathlib import Path

import pytest
from conftest import ROOT

from checkllm_batch.assertions.registry import ALIASES, REGISTRY, AcrossType, JudgeType

PACKAGE = ROOT / "checkllm_batch"
GRADED = PACKAGE / "assertions" / "graded"
SHARED = {"__init__", "context", "prompts", "replies", "shared"}  # no type, no prompt here
MODEL_GRADED = sorted(name for name, t in REGISTRY.items()
                      if isinstance(t, JudgeType) or isinstance(t, AcrossType) and t.uses_judge)


def _prompts(path: Path) -> list[str]:
    """The default prompts a module defines: its module-level `NAME: Messages = [...]`."""
    return [node.target.id for node in ast.parse(path.read_text(encoding="utf-8")).body
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
            and ast.unparse(node.annotation) == "Messages"]


def test_the_table_is_not_empty():
    assert {"llm-rubric", "g-eval", "select-best", "similar"} <= set(MODEL_GRADED)


@pytest.mark.parametrize("name", MODEL_GRADED)
def test_each_graded_type_lives_in_a_module_of_its_own_family(name):
    module = REGISTRY[name].fn.__module__
    assert module.startswith("checkllm_batch.assertions.graded."), module
    assert module.rsplit(".", 1)[1] not in SHARED, f"{name} is declared in a shared module"


@pytest.mark.parametrize("name", MODEL_GRADED)
def test_each_chat_graded_type_has_its_prompt_in_its_module(name):
    """A type that asks the judge in words (not only embeddings) reads a default prompt
    defined next to it, and the prompt it names is there."""
    fn = REGISTRY[name].fn
    path = Path(importlib.import_module(fn.__module__).__file__ or "")
    source = ast.unparse(ast.parse(path.read_text(encoding="utf-8")))
    body = ast.unparse(next(n for n in ast.walk(ast.parse(source))
                            if isinstance(n, ast.FunctionDef) and n.name == fn.__name__))
    if "g.chat(" not in body and "one_call(" not in body:
        pytest.skip(f"{name} asks for embeddings or no judge: no prompt")
    used = [p for p in _prompts(path) if p in body]
    assert used, f"{name}: no default prompt of {path.name} is used by {fn.__name__}"


def test_prompts_live_only_in_type_modules():
    shared = {p.stem: _prompts(p) for p in GRADED.glob("*.py") if p.stem in SHARED}
    assert not any(shared.values()), shared
    elsewhere = {str(p.relative_to(ROOT)): _prompts(p) for p in PACKAGE.rglob("*.py")
                 if GRADED not in p.parents and _prompts(p)}
    assert not elsewhere, elsewhere


@pytest.mark.parametrize("folder", ["judge", "evaluate/judging"])
def test_the_judge_side_names_no_graded_type(folder):
    """The transport and the evaluation side are generic: no graded type's name in them."""
    names = set(MODEL_GRADED) | {a for a, t in ALIASES.items() if t in MODEL_GRADED}
    names.discard("model")  # also the assertion field naming the grading model
    found = [f"{path.relative_to(ROOT)}: {node.value!r}"
             for path in sorted((PACKAGE / folder).glob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Constant) and node.value in names]
    assert not found, found


def test_judge_imports_only_the_judge_settings():
    """judge/ is transport: below assertions, it imports nothing of the package but itself,
    suites.judge (its settings) and errors."""
    allowed = ("checkllm_batch.judge", "checkllm_batch.suites.judge", "checkllm_batch.errors")
    found = []
    for path in sorted((PACKAGE / "judge").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                target = ".".join(["checkllm_batch", "judge"][:3 - node.level]
                                  + ([node.module] if node.module else []))
                if not target.startswith(allowed):
                    found.append(f"{path.name}: {target}")
    assert not found, found
