"""Decision parsing: the schema is strict, and malformed output names its problems."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from golem.cognition.decisions import Decision, Malformed, parse_decision

GOOD = {
    "analysis": "ETH fell 7% in ten minutes; liquidations cluster after oracle updates.",
    "predictions": [{"subject": "ETH/USD", "quantity": "price_move", "direction": "down",
                     "magnitude": 0.02, "confidence": 0.6, "horizon_ticks": 5}],
    "actions": [{"kind": "swap", "contract": "0xpool", "asset_in": "WETH", "asset_out": "USDC",
                 "amount": 1.5, "notional_usd": 3000.0, "reason": "de-risk"}],
    "referenced": ["grimoire://golem/insight/abc"],
    "missing_context": ["lending pool health factors"],
}


def test_a_good_decision_parses_bare_or_fenced() -> None:
    bare = parse_decision(json.dumps(GOOD))
    fenced = parse_decision("Here is my decision:\n```json\n" + json.dumps(GOOD) + "\n```\n")
    assert isinstance(bare, Decision) and bare == fenced
    assert bare.predictions[0].direction == "down" and bare.predictions[0].horizon_ticks == 5
    assert bare.actions[0].notional_usd == 3000.0
    assert bare.referenced == ("grimoire://golem/insight/abc",)


def test_every_problem_is_named() -> None:
    bad = dict(GOOD, analysis="", extra=1)
    bad["predictions"] = [dict(GOOD["predictions"][0], direction="sideways",  # type: ignore[arg-type]
                               confidence=1.5)]
    bad["actions"] = [{"kind": "rug"}]
    result = parse_decision(json.dumps(bad))
    assert isinstance(result, Malformed)
    text = " | ".join(result.problems)
    assert "analysis" in text and "predictions[0]: direction" in text
    assert "actions[0]: kind" in text and "unknown keys: extra" in text


def test_non_json_and_non_objects_are_malformed() -> None:
    assert isinstance(parse_decision("I think we should hold."), Malformed)
    assert isinstance(parse_decision("{not json}"), Malformed)
    assert isinstance(parse_decision("```json\n[1, 2]\n```"), Malformed)


@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text: str) -> None:
    result = parse_decision(text)
    assert isinstance(result, Decision | Malformed)
    if isinstance(result, Decision):
        assert result.analysis.strip()
