"""Docs are tested like code: every registered type has a section, every alias a mention."""

import re

import pytest
from conftest import ROOT

from checkllm_batch.assertions.registry import ALIASES, PROMPTKIT, REGISTRY

DOCS = ROOT / "docs" / "assertions"


def _docs() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md")))


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_type_has_a_section(name):
    headings = set(re.findall(r"^## (\S+)\s*$", _docs(), re.M))
    assert name in headings, f"docs/assertions has no '## {name}' section"


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_every_alias_is_mentioned(alias):
    assert f"`{alias}`" in _docs(), f"alias {alias} is not documented"


@pytest.mark.parametrize("name", sorted(PROMPTKIT))
def test_every_promptkit_name_is_mentioned(name):
    assert f"`{name}`" in _docs(), f"PromptKit check {name} is not documented"


PAGES = sorted(p.stem for p in DOCS.glob("*.md") if p.stem != "README")


def _page_of(module: str) -> str:
    """The docs page a type module stands for: assertions/text.py is text.md, every module
    of assertions/graded/ is graded.md."""
    return module.removeprefix("checkllm_batch.assertions.").split(".")[0]


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_each_type_lives_in_the_module_of_its_docs_page(name):
    module = REGISTRY[name].fn.__module__
    page = DOCS / f"{_page_of(module)}.md"
    text = page.read_text(encoding="utf-8") if page.exists() else ""
    assert re.search(rf"^## {re.escape(name)}\s*$", text, re.M), \
        f"{name} is declared in {module}, but {page.name} has no '## {name}' section"


@pytest.mark.parametrize("page", PAGES)
def test_each_docs_page_has_its_module(page):
    modules = {_page_of(t.fn.__module__) for t in REGISTRY.values()}
    assert page in modules, f"docs/assertions/{page}.md documents no type of assertions/{page}"


def test_no_type_has_a_section_on_another_page():
    misplaced = [f"{page.name}: ## {name} (declared in {REGISTRY[name].fn.__module__})"
                 for page in sorted(DOCS.glob("*.md"))
                 for name in re.findall(r"^## (\S+)\s*$", page.read_text(encoding="utf-8"), re.M)
                 if name in REGISTRY and _page_of(REGISTRY[name].fn.__module__) != page.stem]
    assert not misplaced, misplaced


ARCHITECTURE = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "checkllm_batch"


def _folder_lines() -> set[str]:
    """The folders docs/architecture.md gives a line: `- `name/` — ...` under ## Folders."""
    section = ARCHITECTURE.read_text(encoding="utf-8").split("\n## Folders", 1)[1]
    return set(re.findall(r"^- `([\w/]+)/` ", section.split("\n## ", 1)[0], re.M))


def _package_folders() -> set[str]:
    return {p.parent.relative_to(PACKAGE).as_posix() for p in PACKAGE.rglob("__init__.py")
            if p.parent != PACKAGE}


def test_every_package_folder_has_a_line_in_the_architecture():
    missing = sorted(_package_folders() - _folder_lines())
    assert not missing, ("docs/architecture.md (## Folders) has no line for: "
                         + ", ".join(f"checkllm_batch/{m}/" for m in missing)
                         + "; add one per folder: - `name/` — what it holds")


def test_every_architecture_line_names_a_package_folder():
    stale = sorted(_folder_lines() - _package_folders())
    assert not stale, f"docs/architecture.md names folders that do not exist: {stale}"


# folders of tests/ that mirror no package folder (docs/architecture.md, ## Tests): whole
# runs, and checks of the repository itself
CROSS_CUTTING = {"e2e", "repo"}


def test_test_folders_mirror_the_package():
    tests = ROOT / "tests"
    folders = {p.parent.relative_to(tests).as_posix() for p in tests.rglob("test_*.py")}
    stray = sorted(folders - _package_folders() - CROSS_CUTTING - {"."})
    assert not stray, (f"tests/ folders that mirror no folder of checkllm_batch/: {stray}; "
                       "move their tests to the folder of the package they test")
