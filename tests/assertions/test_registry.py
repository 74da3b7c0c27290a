"""The registry: a record per kind, built from the decorator's keywords, and lookups."""

from __future__ import annotations

import pytest

from checkllm_batch.assertions.registry import (
    REGISTRY,
    AcrossType,
    JudgeType,
    Kind,
    VectorType,
    assertion,
    lookup,
)

RECORD_OF = {Kind.VECTOR: VectorType, Kind.DISTINCT: VectorType, Kind.JUDGE: JudgeType,
             Kind.ACROSS: AcrossType}


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_each_type_has_the_record_of_its_kind(name):
    assert type(REGISTRY[name]) is RECORD_OF[REGISTRY[name].kind]


def test_options_land_in_their_records():
    assert lookup("similarity").reading.value_aliases == ("reference",)
    assert lookup("python").reading.code_ref and isinstance(lookup("python"), VectorType)
    assert lookup("factuality").waits and not lookup("contains").waits


# (decorator keywords, the error): what a kind does not have is refused when it registers
BAD = [
    ({"kind": Kind.JUDGE, "needs_text": True}, "needs_text is a choice of vector"),
    ({"kind": Kind.JUDGE, "pooled": True}, "pooled"),
    ({"kind": Kind.VECTOR, "uses_judge": True}, "uses_judge"),
    ({"kind": Kind.ACROSS, "test_options": ("x",)}, "test_options"),
]


@pytest.mark.parametrize("options,message", BAD)
def test_a_kind_refuses_options_of_another(options, message):
    with pytest.raises(TypeError, match=message):
        assertion("zz-unregistered", **options)(lambda ctx: None)
    assert "zz-unregistered" not in REGISTRY


def test_assert_set_is_no_type_but_a_known_name():
    with pytest.raises(RuntimeError, match="not a type"):
        assertion("assert-set")(lambda ctx: None)
    with pytest.raises(KeyError, match="group of assertions"):
        lookup("assert-set")
    with pytest.raises(KeyError, match='did you mean "assert-set"'):
        lookup("asert-set")


@pytest.mark.parametrize("name", ["", "contians", "Ünïcödé"])
def test_unknown_names_are_key_errors(name):
    with pytest.raises(KeyError, match="unknown assertion type"):
        lookup(name)
