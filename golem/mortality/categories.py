"""The nine categories of the death reflection (Thanatopsis Phase II), shared by the
reflection that writes them and the testament that carries them to a successor."""

from __future__ import annotations

# key -> the heading a reader (or successor) sees. Order is the reading order.
REFLECTION_CATEGORIES: dict[str, str] = {
    "what_worked": "What worked",
    "what_failed": "What failed",
    "suspected_unproven": "What I suspect but can't prove",
    "what_confused_me": "What confused me",
    "never_tested": "What I never had time to test",
    "market_beliefs": "What I believe about this market",
    "warnings": "Warnings for whoever comes next",
    "would_do_differently": "What I would do differently",
    "open_questions": "Questions I leave open",
}
