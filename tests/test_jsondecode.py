"""golem.runtime.jsondecode.loads gives what json.loads gives, or raises what it raises."""

from __future__ import annotations

import json
import math
import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from golem.runtime import jsondecode


def same(a: Any, b: Any) -> bool:
    """Equal values of equal types, floats compared by their bits (NaN and -0.0 too)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return struct.pack("<d", a) == struct.pack("<d", b) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


# every code point, lone surrogates included (a str may hold them; json.dumps escapes them)
TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None))
SCALARS = (st.none() | st.booleans() | st.floats(allow_nan=True, allow_infinity=True)
           | st.integers() | st.integers(min_value=-(2**300), max_value=2**300) | TEXT)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5)
                      | st.dictionaries(TEXT, inner, max_size=5), max_leaves=30)


@settings(max_examples=400)
@given(VALUES, st.booleans())
def test_loads_gives_what_json_loads_gives(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert same(jsondecode.loads(text), json.loads(text))
    if not ascii_only and not any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        assert same(jsondecode.loads(text.encode()), json.loads(text))


@pytest.mark.parametrize("text", [
    '{"a": 1, "a": 2}', "[1e400, -1e400, 1e-400]", "[NaN, Infinity, -Infinity]",
    "[-0.0, -0, 4.9e-324, 1.7976931348623157e308, 0.30000000000000004]",
    f"[{2**255}, {-(2**300)}, 123456789012345678901234567890.5]",
    '["\\ud800", "\\udc00x", "\\ud83d\\ude00", "\\u0000", "é"]',  # lone surrogates: json's
    '  {"a": [true, false, null]}  ',
])
def test_edge_cases_decode_as_json_decodes_them(text: str) -> None:
    assert same(jsondecode.loads(text), json.loads(text))


def test_a_str_holding_an_unpaired_surrogate_decodes_as_json_decodes_it() -> None:
    text = '["\ud800 raw"]'  # not UTF-8 encodable: jiter never sees it
    assert jsondecode.loads(text) == json.loads(text) == ["\ud800 raw"]


@pytest.mark.parametrize("text", ["", "{", '{"a": }', "[1,]", "nul", '{"a": 1} x', b"\xff"])
def test_bad_text_raises_what_json_raises(text: str | bytes) -> None:
    with pytest.raises(ValueError) as expected:
        json.loads(text)
    with pytest.raises(type(expected.value)):
        jsondecode.loads(text)
