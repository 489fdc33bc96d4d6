"""What the journal and `golem status` say about the knowledge behind a decision, for
the offline tier's records, a model's, and records written before knowledge was kept."""

from __future__ import annotations

import json

from golem.cognition.journal import knowledge_of
from golem.status import _knowledge_lines

PREDICTION = {"predictions": [{"direction": "up", "confidence": 0.61}]}
LEARNED = {"uri": "grimoire://g/insight/f1", "share": 0.0042,
           "text": "After oracle feed 0xfeed fell 1.5% or more ..."}


def record(knowledge: object) -> str:
    data: dict[str, object] = {"decision": PREDICTION}
    if knowledge is not None:
        data["knowledge"] = knowledge
    return json.dumps(data)


def test_each_kind_of_record_is_told_apart() -> None:
    learned = knowledge_of(9, record({"attribution": [LEARNED], "outlook": [0.2, 0.1, 0.7],
                                      "skipped": 2}))
    prior = knowledge_of(8, record({"attribution": [], "outlook": [0.45, 0.1, 0.45],
                                    "skipped": 0}))
    model = knowledge_of(7, record({"attribution": [], "outlook": None, "skipped": 0}))
    old = knowledge_of(6, record(None))
    garbage = knowledge_of(5, "not json")
    assert learned["prediction"] == {"direction": "up", "confidence": 0.61}
    assert (old["recorded"], garbage["recorded"], garbage["prediction"]) == (False, False, None)
    lines = _knowledge_lines([learned, prior, model, old, garbage])
    assert lines[1] == ("    tick 9: up (0.61), outlook down 20% / flat 10% / up 70%; from 1 "
                        "learned entry; 2 malformed fact(s) skipped")
    assert lines[2] == f"      +0.420% {LEARNED['uri']}: {LEARNED['text']}"
    assert lines[3].endswith("from the prior (nothing learned matched)")
    assert lines[4].endswith("from no learned entry cited")
    assert lines[5].endswith("no knowledge record (journalled before one was kept)")
    assert lines[6] == ("    tick 5: no prediction; from no knowledge record (journalled "
                        "before one was kept)")
    assert _knowledge_lines([]) == []
