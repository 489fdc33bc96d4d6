"""I-frame / P-frame bookkeeping across Theta ticks (seed 002 S2.2, seed 000 "context
delta compression"); pure: the caller passes the golem time in.

An I-frame makes the tick's workspace the keyframe, sent whole (and cached by the
API); later ticks are P-frames that resend the keyframe and every earlier P-frame's
changes byte-identical (from the cache) plus this tick's changes, until
``next_frame`` calls for a new keyframe (the chain's restated tokens past 30% of
the budget among its reasons). A chain counts as cached only once a model call
carried it, and only while the API's cache TTL can still hold it: a P-frame over an
uncached keyframe would pay for the keyframe and the changes both.
"""

from __future__ import annotations

from dataclasses import dataclass

from golem.cognition.prompt import PROMPT_CACHE_TTL_S, delta_tokens, stable_key
from golem.governor.categories import MarketRegime, Phase
from golem.governor.workspace import (
    CognitiveWorkspace,
    FrameDecision,
    FrameKind,
    FrameState,
    next_frame,
)

# a keyframe last sent longer ago than this may be out of the cache when the next
# request arrives (a request leaves within its tick, well under 30 s)
CACHE_WARM_S = PROMPT_CACHE_TTL_S - 30.0


@dataclass
class Keyframes:
    state: FrameState | None = None
    keyframe: CognitiveWorkspace | None = None
    links: tuple[CognitiveWorkspace, ...] = ()  # the P-frames sent since the keyframe
    chain_tokens: int = 0  # delta tokens those links restated
    sent_at: float | None = None  # golem time the chain last went to the API
    _pending: tuple[CognitiveWorkspace, int] | None = None

    def next(self, ws: CognitiveWorkspace, *, phase: Phase, regime: MarketRegime,
             now: float) -> tuple[FrameDecision, CognitiveWorkspace | None,
                                  tuple[CognitiveWorkspace, ...], float]:
        """This tick's frame, the keyframe and links to render a P-frame over (None, ():
        an I-frame), and the delta share: the tokens restated since the keyframe, the
        earlier links' and this tick's, over the budget (0 on an I-frame)."""
        key, sent, self._pending = self.keyframe, self.sent_at, None
        step = delta_tokens(self.links[-1] if self.links else key, ws) if key else 0
        share = None if key is None or ws.total_budget <= 0 else \
            (self.chain_tokens + step) / ws.total_budget
        frame = next_frame(self.state, phase=phase, regime=regime, delta_share=share,
                           stable_changed=key is not None and stable_key(key) != stable_key(ws),
                           cache_warm=sent is not None and now - sent < CACHE_WARM_S)
        self.state = frame.state
        if frame.kind is FrameKind.I_FRAME:
            self.keyframe, self.links, self.chain_tokens, self.sent_at = ws, (), 0, None
            return frame, None, (), 0.0
        self._pending = (ws, step)
        return frame, key, self.links, share or 0.0

    def sent(self, now: float) -> None:
        """A model call carried this tick's request: its P-frame becomes a link that the
        next request resends from the cache."""
        self.sent_at = now
        if self._pending is not None:
            ws, step = self._pending
            self.links, self.chain_tokens = (*self.links, ws), self.chain_tokens + step
            self._pending = None
