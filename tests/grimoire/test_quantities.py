"""Quantities: the numbers a record's text states, and arrange by a query's intent (pure)."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from golem.grimoire.quantities import (
    Amount,
    Measured,
    amounts,
    arrange,
    compared,
    first_move,
    move_admits,
)
from golem.grimoire.query_numbers import Intent, read_intent

FEED = "episode:oracle:AnswerUpdated:0xfeed"
SWAP = "episode:swap:Swap:0xpool"


def test_amounts_with_units_and_roles() -> None:
    text = ("Market steady: price +0.1% over 1 min. Uniswap V2 swap on the WETH/USDC pool: "
            "0.5684 WETH sold for 1,164 USDC by trader 6813")
    assert amounts(text) == [Amount(0.5684, "weth", "sold"), Amount(1164.0, "usdc", "by")]
    outcome = "Realised a loss of $0.0278; equity $101.19 -> $101.16."
    assert amounts(outcome) == [Amount(0.0278, "usd", "loss"), Amount(101.19, "usd", "equity"),
                                Amount(101.16, "usd", None)]
    assert amounts("by trader 6813, tick -200081") == []  # no unit: not an amount


def test_the_first_move_is_the_events_own() -> None:
    assert first_move("Answer down 2.3% from the previous one; market falling: price -2.1% "
                      "over 7 min.") == -2.3
    assert first_move("Answer unchanged from the previous one; market falling: price -3.7%") == 0
    assert first_move("Market surging: price +11.9% over 10 min. Swap") == 11.9
    assert first_move("Chainlink price update on the ETH/USD price feed: 2,059") is None


def test_the_first_move_is_the_first_in_the_text_of_any_form() -> None:
    assert first_move("Market steady: price +0.4% over 1 min. Answer down 2.3%") == 0.4
    assert first_move("Answer up 1,204.5% then price: -3%") == 1204.5
    assert first_move("price: \u22121.5% and later Answer up 4%") == -1.5
    assert first_move("Answer UNCHANGED; market surging: price +3%") == 0
    assert first_move("a 5% fee, 0.3% of it to us") is None  # a bare percentage is no move
    assert first_move("") is None


def feed(move: str, when: float, relevance: float = 0.9) -> Measured:
    return Measured(relevance, when, f"Answer {move} from the previous one. Chainlink update",
                    FEED)


def test_the_latest_fall_past_a_threshold_comes_first_whatever_its_relevance() -> None:
    items = [feed("down 2.3%", 50, 1.0), feed("up 0.9%", 90), feed("down 4.5%", 80, 0.4),
             feed("down 2.9%", 70, 0.4), feed("down 0.3%", 95),
             Measured(0.95, 99, "Market falling: price -9% over 5 min. Swap", SWAP)]
    intent = read_intent("When did the ETH price feed last fall more than 2%?")
    ranked, quantities, front = arrange(items, lambda m: m, intent, intent.rest)
    assert [m.when for m in ranked[:front]] == [80, 70, 50]
    assert quantities[:front] == [-4.5, -2.9, -2.3]
    # the rest keep their order; the swap is another kind, so its market move does not count
    assert [m.when for m in ranked[front:]] == [90, 95, 99]


def swap(text: str, relevance: float = 0.9) -> Measured:
    return Measured(relevance, 0.0, f"Uniswap V2 swap on the WETH/USDC pool: {text}", SWAP)


def test_the_largest_in_the_unit_and_role_the_query_names() -> None:
    items = [swap("0.5 WETH sold for 1,000 USDC", 1.0), swap("9,000 USDC sold for 4.4 WETH"),
             swap("2.1 WETH sold for 4,300 USDC", 0.5), swap("0.9 WETH sold for 1,900 USDC")]
    intent = read_intent("The biggest WETH sold for USDC in the WETH/USDC pool")
    ranked, quantities, front = arrange(items, lambda m: m, intent, intent.rest)
    assert front == 3  # the swap that sold USDC has no WETH "sold"
    assert ranked[0] is items[2] and quantities[0] == 2.1
    smallest = read_intent("the smallest USDC swap")
    ranked, quantities, _ = arrange(items, lambda m: m, smallest, smallest.rest)
    assert quantities[0] == 1000.0


def test_a_threshold_in_a_unit_filters_without_reordering() -> None:
    items = [swap("0.5 WETH sold for 1,000 USDC", 1.0), swap("6 WETH sold for 12,000 USDC"),
             swap("9 WETH sold for 18,000 USDC", 0.8)]
    intent = read_intent("swaps that sold more than 5 WETH")
    ranked, quantities, front = arrange(items, lambda m: m, intent, intent.rest)
    assert ranked == [items[1], items[2], items[0]] and front == 2
    assert quantities[:2] == [6.0, 9.0]
    # the role before the threshold: a swap that bought 7 WETH did not sell it
    bought = [*items, swap("14,000 USDC sold for 7 WETH", 1.0)]
    ranked, _, front = arrange(bought, lambda m: m, intent, intent.rest)
    assert ranked[:front] == [items[1], items[2]]


def test_without_an_order_or_threshold_nothing_moves() -> None:
    items = [swap("0.5 WETH sold for 1,000 USDC"), swap("6 WETH sold for 12,000 USDC")]
    intent = read_intent("swaps on the WETH/USDC pool after the last liquidation")
    assert arrange(items, lambda m: m, intent, intent.rest) == (items, [None, None], 0)


@given(st.text(max_size=120), st.text(max_size=120))
def test_any_text_and_query_arrange_without_error(text: str, query: str) -> None:
    intent = read_intent(query)
    ranked, quantities, front = arrange([Measured(0.5, 1.0, text, SWAP)], lambda m: m, intent,
                                        intent.rest)
    assert len(ranked) == len(quantities) == 1 and front in (0, 1)


def test_an_order_over_entries_counts_only_those_close_to_the_best() -> None:
    # every remembered sentence is an entry of one type: the type alone says nothing
    def said(relevance: float, when: float) -> Measured:
        return Measured(relevance, when, "Emi: I went hiking again", "entry:fact",
                        structural=False)

    items = [said(1.0, 10), said(0.95, 20), said(0.5, 99)]
    intent = read_intent("When did Emi last go hiking?")
    ranked, _, front = arrange(items, lambda m: m, intent, intent.rest)
    assert front == 2 and ranked == [items[1], items[0], items[2]]


def test_an_order_compares_events_over_an_entry_that_restates_their_words() -> None:
    # a learned lesson quotes the feed's moves; it did not happen "last"
    lesson = Measured(1.0, 200, "After oracle feed 0xfeed fell 1.5% or more over 10 min, "
                      "the next hour's move was down", "entry:heuristic", structural=False)
    items = [lesson, feed("down 1.4%", 50, 0.82), feed("up 0.3%", 90, 0.8),
             feed("down 0.1%", 95, 0.8)]
    intent = read_intent("When did the ETH oracle last drop by over 1%?")
    ranked, quantities, front = arrange(items, lambda m: m, intent, intent.rest)
    assert front == 1 and ranked[0] is items[1] and quantities[0] == -1.4
    assert compared(items, intent) == 1
    # an event far less relevant than the best entry is not what the query is about
    weak = [lesson, feed("down 1.4%", 50, 0.7)]
    assert compared(weak, intent) == 0
    ranked, _, front = arrange(weak, lambda m: m, intent, intent.rest)
    assert ranked[0] is lesson
    # a threshold without an order by time asks about the best candidate's kind:
    # "after oracle feed X moved less than 0.5%, what ..." wants the lessons
    theta = read_intent("after oracle feed 0xfeed moved less than 0.5% in regime calm, "
                        "what the next minutes returned")
    assert theta.threshold is not None and compared(items, theta) == 0


def admits_text(intent: Intent) -> Callable[[str], bool] | None:
    """Whether a text passes the intent's threshold on a move, as recall asks it."""
    admits = move_admits(intent)
    return None if admits is None else (lambda text: admits(first_move(text)))


def test_a_move_threshold_reads_the_first_move_of_a_text() -> None:
    passes = admits_text(read_intent("When did the ETH price feed last fall more than 2%?"))
    assert passes is not None
    assert passes("Answer down 2.6% from the previous one; market falling: price -0.1%")
    # the event's own move decides, not the market's, and a rise is not a fall
    assert not passes("Answer down 0.3% from the previous one; market falling: price -5%")
    assert not passes("Answer up 4.1% from the previous one")
    assert not passes("Answer unchanged from the previous one")
    assert not passes("Chainlink price update\n0xfeed 0xabc")  # no move stated
    either = admits_text(read_intent("oracle update above 5 percent"))
    assert either is not None and either("Answer up 5.2%") and either("Answer down 6%")
    assert admits_text(read_intent("the biggest WETH sold")) is None  # no threshold
    assert admits_text(read_intent("borrows above 1,000 USDC")) is None  # not a move
