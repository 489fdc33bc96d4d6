"""The model tiers of Theta: render the workspace, call the API within the spend ledger,
run tool rounds, and read a decision back.

Every call reserves its worst case in the ledger before it is sent and settles from
the reply's usage; a call refused before the model ran (429, 529, a bad request) is
released, and one that may have been billed (a timeout) stays reserved, so spend is
never under-counted. Any failure comes back as a reason, and Theta decides with the
offline tier for that tick instead, labelled as such.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from golem.cognition.anthropic_provider import AnthropicProvider, LlmResult, ProviderSettings
from golem.cognition.decisions import Decision, Malformed, parse_decision
from golem.cognition.errors import BudgetExceeded, CognitionError, LlmUnavailable
from golem.cognition.ledger import ModelPrice, SpendLedger, worst_case_input_tokens
from golem.cognition.prompt import parse_response, render
from golem.cognition.tiers import Tier
from golem.cognition.tools import run_tool_rounds
from golem.config import CognitionSection
from golem.governor.workspace import CognitiveWorkspace
from golem.grimoire.grimoire import Grimoire
from golem.redact import redact

LEDGER_FILE = "spend.db"
IDENTITY = ("You are a golem: an autonomous DeFi agent with a finite budget. You observe a "
            "market, predict, and propose actions that deterministic policy checks will judge.")


@dataclass(frozen=True)
class ModelDecision:
    decision: Decision | Malformed | None  # None: no usable reply (see error)
    model: str
    cost_usd: float
    cited: frozenset[str]
    rounds: int
    error: str = ""


@dataclass(frozen=True)
class Written:
    """One plain model reply (no tools): its text, what it cost and how it stopped."""

    text: str
    cost_usd: float
    model: str
    stop_reason: str | None = None

    @property
    def truncated(self) -> bool:
        return self.stop_reason == "max_tokens"


class _Ledgered:
    """A Completer that books every call in the spend ledger."""

    def __init__(self, provider: AnthropicProvider, ledger: SpendLedger,
                 now: Callable[[], float], model: str, max_tokens: int, *,
                 purpose: str = "theta") -> None:
        self.provider, self.ledger, self.now = provider, ledger, now
        self.model, self.max_tokens, self.purpose = model, max_tokens, purpose
        self.cost_micro = 0

    async def complete(self, request: Mapping[str, Any]) -> LlmResult:
        req = {**request, "model": self.model, "max_tokens": self.max_tokens}
        rid = await anyio.to_thread.run_sync(lambda: self.ledger.reserve(
            self.model, worst_case_input_tokens(req), self.max_tokens, now=self.now(),
            purpose=self.purpose))
        try:
            result = await self.provider.complete(req)
        except LlmUnavailable as exc:
            if exc.kind in ("rate_limited", "overloaded", "connection"):
                await anyio.to_thread.run_sync(lambda: self.ledger.release(rid, now=self.now()))
            raise  # a timeout may have been billed: the reservation stays counted
        except CognitionError:
            await anyio.to_thread.run_sync(lambda: self.ledger.release(rid, now=self.now()))
            raise
        self.cost_micro += await anyio.to_thread.run_sync(
            lambda: self.ledger.settle(rid, result.usage, now=self.now()))
        return result


class ModelCognition:
    def __init__(self, cfg: CognitionSection, provider: AnthropicProvider, ledger: SpendLedger,
                 grimoire: Grimoire, now: Callable[[], float]) -> None:
        self.cfg, self.provider, self.ledger = cfg, provider, ledger
        self.grimoire, self.now = grimoire, now

    @classmethod
    def open(cls, cfg: CognitionSection, api_key: str, ledger_path: Path, grimoire: Grimoire,
             now: Callable[[], float]) -> ModelCognition:
        prices = {cfg.model_t1: ModelPrice(*cfg.prices_t1),
                  cfg.model_t2: ModelPrice(*cfg.prices_t2)}
        ledger = SpendLedger(ledger_path, prices, daily_cap_usd=cfg.daily_cap_usd or None,
                             lifetime_cap_usd=cfg.lifetime_cap_usd or None)
        settings = ProviderSettings(base_url=cfg.base_url or None, timeout_s=cfg.timeout_s,
                                    max_attempts=cfg.max_attempts,
                                    call_budget_s=cfg.timeout_s * cfg.max_attempts)
        provider = AnthropicProvider(settings, api_key=api_key, clock=now, sleep=anyio.sleep,
                                     rng=random.Random())  # noqa: S311 - jitter
        return cls(cfg, provider, ledger, grimoire, now)

    def budget_left_usd(self) -> float:
        totals = self.ledger.totals(now=self.now())
        left = [cap - spent for cap, spent in ((totals.daily_cap_usd, totals.today_usd),
                                               (totals.lifetime_cap_usd, totals.lifetime_usd))
                if cap is not None]
        return min(left) if left else float("inf")

    def worst_usd(self, tier: Tier, context_tokens: int) -> float:
        _, max_tokens, prices = self._tier(tier)
        price = ModelPrice(*prices)
        # context + instructions + tool schemas, bytes-as-tokens (the ledger's bound)
        return price.worst_case_micro(4 * context_tokens + 8_000, max_tokens) / 1e6

    def available(self) -> bool:
        return not self.provider.breaker.is_open

    async def decide(self, tier: Tier, workspace: CognitiveWorkspace, *, strategy: str,
                     situation: str, keyframe: CognitiveWorkspace | None = None,
                     links: Sequence[CognitiveWorkspace] = ()) -> ModelDecision:
        """One decision; ``keyframe`` set: a P-frame over it and the ``links`` sent since
        (see prompt.render)."""
        model, max_tokens, _ = self._tier(tier)
        caller = _Ledgered(self.provider, self.ledger, self.now, model, max_tokens)
        request = render(workspace, identity=IDENTITY, strategy=strategy, situation=situation,
                         keyframe=keyframe, links=links)
        try:
            rounds = await run_tool_rounds(caller, request, self.grimoire,
                                           self.cfg.max_tool_rounds)
        except (CognitionError, BudgetExceeded) as exc:
            return ModelDecision(None, model, caller.cost_micro / 1e6, frozenset(), 0,
                                 f"{type(exc).__name__}: {exc}")
        text, cited = parse_response(rounds.result.content)
        decision = parse_decision(text) if rounds.result.stop_reason != "tool_use" else \
            Malformed(("the model was still calling tools after the last round",), text)
        return ModelDecision(decision, model, caller.cost_micro / 1e6, cited, rounds.rounds)

    def worst_write_usd(self, tier: Tier, *, system: str, user: str,
                        max_tokens: int | None = None) -> float:
        """The most one ``write`` of this request may cost (what the ledger reserves)."""
        _, default_max, prices = self._tier(tier)
        request = _plain_request(system, user)
        return ModelPrice(*prices).worst_case_micro(
            worst_case_input_tokens(request), max_tokens or default_max) / 1e6

    async def write(self, tier: Tier, *, system: str, user: str, purpose: str,
                    max_tokens: int | None = None) -> Written:
        """One ledgered call without tools (Delta's summaries, rewrites and judgements).

        ``purpose`` names the spender in the ledger row. Raises BudgetExceeded when a cap
        would be passed and another CognitionError when the call fails; the caller keeps
        its own fallback.
        """
        model, default_max, _ = self._tier(tier)
        caller = _Ledgered(self.provider, self.ledger, self.now, model,
                           max_tokens or default_max, purpose=purpose)
        result = await caller.complete(_plain_request(system, user))
        text, _ = parse_response(result.content)
        return Written(text, caller.cost_micro / 1e6, model, result.stop_reason)

    async def aclose(self) -> None:
        await self.provider.aclose()
        self.ledger.close()

    def _tier(self, tier: Tier) -> tuple[str, int, tuple[float, ...]]:
        if tier is Tier.T2:
            return self.cfg.model_t2, self.cfg.max_tokens_t2, self.cfg.prices_t2
        return self.cfg.model_t1, self.cfg.max_tokens_t1, self.cfg.prices_t1


def _plain_request(system: str, user: str) -> dict[str, Any]:
    """system and user text, redacted (as prompt.render does) so no key reaches the API."""
    return {"system": [{"type": "text", "text": redact(system)}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": redact(user)}]}]}
