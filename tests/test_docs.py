"""Docs are tested like code: every registered type has a section, every alias a mention."""

import re

import pytest
from conftest import ROOT

from checkllm_batch.assertions.registry import ALIASES, REGISTRY

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
