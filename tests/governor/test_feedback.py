"""Loop 1's similarity rule and Loop 2's Beta learning and capped optimiser."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from golem.governor.categories import Category, MarketRegime
from golem.governor.feedback import (
    MAX_DELTA,
    BetaTable,
    FeedbackSample,
    capped_shares,
    max_similarity,
    proposed_steps,
    referenced_mask,
    run_loop2,
)
from golem.governor.policy import ContextPolicy, default_policy, normalise

C = Category
R = MarketRegime
cats = st.sampled_from(list(Category))
cat_sets = st.frozensets(cats, max_size=13)
samples = st.builds(
    FeedbackSample,
    regime=st.sampled_from(list(MarketRegime)),
    injected=cat_sets,
    referenced=cat_sets,
    quality=st.none() | st.floats(0.0, 1.0),
    missing=st.lists(cats, max_size=3).map(tuple),
)
allocations = st.fixed_dictionaries(
    {c: st.floats(0.0, 1.0) for c in Category}).filter(lambda a: sum(a.values()) > 0.05)
steps = st.fixed_dictionaries({c: st.floats(-0.2, 0.2) for c in Category})


def good(*cats_: Category, regime: R = R.CALM) -> FeedbackSample:
    return FeedbackSample(regime, frozenset(cats_), frozenset(cats_), quality=0.9)


def test_beta_update_follows_the_seed() -> None:
    t = BetaTable()
    assert t.get(R.CALM, C.EPISODES) == (2.0, 2.0)
    assert t.mean(R.CALM, C.EPISODES) == 0.5
    t = t.updated([
        FeedbackSample(R.CALM, frozenset({C.EPISODES}), quality=0.8),
        FeedbackSample(R.CALM, frozenset({C.EPISODES, C.PLAYBOOK}), quality=0.2),
        FeedbackSample(R.CALM, frozenset({C.EPISODES}), quality=0.5),  # not > 0.5: bad
        FeedbackSample(R.CALM, frozenset({C.EPISODES}), quality=None),  # unscored: ignored
        FeedbackSample(R.CRASH, frozenset({C.EPISODES}), quality=1.0),
    ])
    assert t.get(R.CALM, C.EPISODES) == (3.0, 4.0)
    assert t.get(R.CALM, C.PLAYBOOK) == (2.0, 3.0)
    assert t.get(R.CRASH, C.EPISODES) == (3.0, 2.0)  # regimes learn separately
    assert t.get(R.VOLATILE, C.EPISODES) == (2.0, 2.0)


def test_beta_table_rejects_bad_params() -> None:
    with pytest.raises(ValueError):
        BetaTable({(R.CALM, C.EPISODES): (0.0, 2.0)})
    with pytest.raises(ValueError):
        BetaTable({(R.CALM, C.EPISODES): (float("inf"), 2.0)})


@given(st.sampled_from(list(MarketRegime)), cats, st.lists(st.booleans(), min_size=1,
                                                            max_size=30))
def test_beta_means_move_toward_outcomes(regime: R, cat: Category,
                                         outcomes: list[bool]) -> None:
    t = BetaTable()
    for ok in outcomes:
        before = t.mean(regime, cat)
        t = t.updated([FeedbackSample(regime, frozenset({cat}), quality=0.9 if ok else 0.1)])
        after = t.mean(regime, cat)
        assert after > before if ok else after < before
    observed = sum(outcomes) / len(outcomes)
    # The posterior mean lies between the prior's 0.5 and what was observed.
    assert min(0.5, observed) <= t.mean(regime, cat) <= max(0.5, observed)


def test_steps_follow_the_seed_bands() -> None:
    window = [FeedbackSample(R.CALM, frozenset({C.EPISODES, C.CONTRARIAN, C.PLAYBOOK}),
                             frozenset({C.EPISODES} | ({C.PLAYBOOK} if i < 3 else set())),
                             missing=(C.CAUSAL_EDGES,) if i < 2 else ())
              for i in range(10)]
    s = proposed_steps(window, BetaTable(), R.CALM)  # prior Betas: no Beta term
    assert s[C.EPISODES] == pytest.approx(0.02)  # referenced 10/10
    assert s[C.CONTRARIAN] == pytest.approx(-0.015)  # referenced 0/10
    assert s[C.PLAYBOOK] == pytest.approx(0.0)  # 3/10 sits between the bands
    assert s[C.CAUSAL_EDGES] == pytest.approx(0.01)  # two missing-context signals
    assert s[C.MORTALITY] == 0.0  # never injected, never asked for


def test_beta_term_uses_the_given_regime() -> None:
    betas = BetaTable({(R.CRASH, C.MORTALITY): (10.0, 2.0)})
    assert proposed_steps([], betas, R.CRASH)[C.MORTALITY] > 0.0
    assert proposed_steps([], betas, R.CALM)[C.MORTALITY] == 0.0


@given(allocations, steps, st.floats(0.001, 0.05))
def test_cap_holds_and_shares_stay_a_distribution(old: dict[Category, float],
                                                  step: dict[Category, float],
                                                  cap: float) -> None:
    base = normalise(old)
    new = capped_shares(old, step, cap)
    assert math.isclose(math.fsum(new.values()), 1.0, abs_tol=1e-9)
    for c in Category:
        assert new[c] >= 0.0
        assert abs(new[c] - base[c]) <= cap + 1e-9


@given(allocations, steps, cats, st.floats(0.0, 0.2))
def test_more_push_never_lowers_a_share(old: dict[Category, float],
                                        step: dict[Category, float], cat: Category,
                                        extra: float) -> None:
    lower = capped_shares(old, step)
    higher = capped_shares(old, {**step, cat: step[cat] + extra})
    assert higher[cat] >= lower[cat] - 1e-9


def test_capped_shares_moves_toward_the_steps() -> None:
    old = normalise(default_policy().allocations)
    new = capped_shares(old, {C.EPISODES: 0.2, C.CONTRARIAN: -0.2})
    assert new[C.EPISODES] == pytest.approx(old[C.EPISODES] + MAX_DELTA)
    assert new[C.CONTRARIAN] == pytest.approx(old[C.CONTRARIAN] - MAX_DELTA)
    assert capped_shares(old, {}) == pytest.approx(old)


@given(st.lists(samples, max_size=20), st.sampled_from(list(MarketRegime)))
def test_loop2_revision_cap_and_delta(window: list[FeedbackSample], regime: R) -> None:
    p = default_policy()
    upd = run_loop2(p, BetaTable(), window, regime)
    new = upd.policy.allocations
    old = normalise(p.allocations)
    assert upd.policy.revision == p.revision + 1
    assert math.isclose(math.fsum(new.values()), 1.0, abs_tol=1e-9)
    for c in Category:
        assert abs(new[c] - old[c]) <= MAX_DELTA + 1e-9
        assert upd.delta[c] == pytest.approx(new[c] - old[c])
    assert upd.policy.phase_overrides == p.phase_overrides  # Loop 2 learns the base only
    assert upd.policy.retrieval == p.retrieval


@given(st.lists(samples, max_size=15), cats, st.integers(1, 5))
def test_loop2_rewards_helpful_categories(window: list[FeedbackSample], cat: Category,
                                          wins: int) -> None:
    p = default_policy()
    plain = run_loop2(p, BetaTable(), window, R.CALM).policy.allocations[cat]
    helped = run_loop2(p, BetaTable(), window + [good(cat)] * wins,
                       R.CALM).policy.allocations[cat]
    assert helped >= plain - 1e-9


def test_loop2_learns_over_cycles() -> None:
    p: ContextPolicy = default_policy()
    betas = BetaTable()
    start = normalise(p.allocations)[C.CAUSAL_EDGES]
    for _ in range(5):
        window = [FeedbackSample(R.VOLATILE, frozenset(Category), frozenset({C.CAUSAL_EDGES}),
                                 quality=0.9)] * 10
        upd = run_loop2(p, betas, window, R.VOLATILE)
        p, betas = upd.policy, upd.betas
    assert p.revision == 5
    assert p.allocations[C.CAUSAL_EDGES] > start + 0.05
    assert betas.mean(R.VOLATILE, C.CAUSAL_EDGES) > 0.9
    assert upd.delta_dict()[C.CAUSAL_EDGES.value] > 0.0


def test_similarity_rule() -> None:
    entries = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]])
    sentences = np.array([[0.9, 0.1, 0.0], [0.0, 0.5, 0.5]])
    best = max_similarity(entries, sentences)
    assert best[0] == pytest.approx(0.9 / math.hypot(0.9, 0.1))
    assert best[1] == pytest.approx(math.sqrt(0.5))
    assert best[2] == 0.0  # a zero vector is never a paraphrase
    assert referenced_mask(entries, sentences).tolist() == [True, False, False]
    assert referenced_mask(entries, np.zeros((0, 3))).tolist() == [False, False, False]
    with pytest.raises(ValueError):
        max_similarity(entries, np.ones((2, 4)))


@given(st.integers(1, 6), st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_similarity_is_scale_free_and_bounded(n: int, m: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    e, s = rng.normal(size=(n, 8)), rng.normal(size=(m, 8))
    best = max_similarity(e, s)
    assert best.shape == (n,)
    assert np.all(best <= 1.0 + 1e-9) and np.all(best >= -1.0 - 1e-9)
    assert np.allclose(best, max_similarity(e * 3.0, s * 0.5))
    assert referenced_mask(e, e).all()  # every entry quotes itself
