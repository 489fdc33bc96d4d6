"""What a recall query says: its content words, whether it asks why, its time window (pure).

`content_words` drops English function words and punctuation; a query with none
left asks nothing memory can answer, and recall refuses it. `time_window` reads
calendar expressions relative to a reference time (the golem clock): "today",
"yesterday", "this/last week", "this/last month", "this/last year", "N days/hours/
weeks ago", "in the last N days", "in May", "in May 2023", "in 2023", "on 2 March",
"on March 2", "on 2 March 2024". Weeks start on Monday; every date is UTC; a month
or day without a year is its latest occurrence not after the reference time. An
expression it cannot read is ignored (None), never an error.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_WORD = re.compile(r"[0-9a-z]+(?:'[a-z]+)?")
# English function words (articles, pronouns, auxiliaries, prepositions, conjunctions,
# question words): they carry no topic of their own.
STOPWORDS = frozenset((
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "as", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but",
    "by", "can", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for",
    "from", "further", "had", "has", "have", "having", "he", "her", "here", "hers", "herself",
    "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself",
    "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on",
    "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own", "same",
    "she", "should", "so", "some", "such", "than", "that", "the", "their", "theirs", "them",
    "themselves", "then", "there", "these", "they", "this", "those", "through", "to", "too",
    "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which",
    "while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours", "yourself",
    "yourselves", "also", "ever", "get", "got", "let", "lets", "may", "might", "must", "shall",
    "us", "via", "whats", "whos", "wheres", "hows",
))
_MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_MONTHS |= {name.lower(): i for i, name in enumerate(calendar.month_abbr) if name}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_UNIT_S = {"minute": 60.0, "hour": 3600.0, "day": 86400.0, "week": 7 * 86400.0}


@dataclass(frozen=True)
class TimeWindow:
    """[since, until) in UNIX seconds, and the words that named it."""

    since: float
    until: float
    phrase: str

    def contains(self, t: float) -> bool:
        return self.since <= t < self.until


def _function_word(word: str, words: frozenset[str] = STOPWORDS) -> bool:
    """Whether a lowercase word (or its part before an apostrophe) is in ``words``."""
    return word in words or word.split("'", maxsplit=1)[0] in words


def content_words(query: str) -> list[str]:
    """The query's lowercase words that are not function words, in order."""
    text = query.lower().replace("\u2019", "'")  # typographic apostrophes
    return [w for w in _WORD.findall(text) if not _function_word(w)]


# Function words the embedded query keeps: a golem's own actions render as "Our own
# swap ...", so "our own" is what tells them from the market's.
OWN_WORDS = frozenset(("we", "our", "ours", "us", "own"))
_NOT_EMBEDDED = STOPWORDS - OWN_WORDS


def topic_text(query: str) -> str:
    """What recall embeds for ``query``: its whitespace-separated tokens whose word is not
    a function word (OWN_WORDS excepted), as written (case and punctuation kept, so a
    question keeps its question mark); the query itself when every token is one."""
    kept = [token for token in query.split()
            if (word := _WORD.search(token.lower().replace("\u2019", "'"))) is not None
            and not _function_word(word.group(0), _NOT_EMBEDDED)]
    return " ".join(kept) or query


_WHY = re.compile(r"\b(why|what led to|what caused|cause of|caused by|because of|reason for|"
                  r"how come)\b")


_TIME_WORDS = re.compile(rf"\b(yesterday|today|ago|last|past|week|month|year|{_MONTH}|"
                         r"\d{4})\b")


_HEX_ID = re.compile(r"\b0x(?:[0-9a-fA-F]{64}|[0-9a-fA-F]{40})\b")


def hex_identifiers(query: str) -> frozenset[str]:
    """The exact hex identifiers a query names (20-byte addresses, 32-byte hashes),
    lowercase."""
    return frozenset(m.group(0).lower() for m in _HEX_ID.finditer(query))


def mentions_time(query: str) -> bool:
    """Whether the query has words that often name a time (for logging one it could not
    read as a window: the expression is then ignored)."""
    return _TIME_WORDS.search(query.lower()) is not None


def asks_why(query: str) -> bool:
    """Whether the query asks for a cause ("why", "what led to", "what caused", ...)."""
    return _WHY.search(query.lower()) is not None


def time_window(query: str, now: float) -> TimeWindow | None:
    """The first calendar expression in ``query`` as a window before ``now``, or None."""
    text = query.lower()
    ref = datetime.fromtimestamp(now, UTC)
    day = ref.replace(hour=0, minute=0, second=0, microsecond=0)
    for reader in (_relative_days, _ago, _last_n, _day_month, _month_year, _year):
        found = reader(text, ref, day)
        if found is not None:
            since, until, phrase = found
            return TimeWindow(since.timestamp(), until.timestamp(), phrase)
    return None


Span = tuple[datetime, datetime, str] | None


def _relative_days(text: str, ref: datetime, day: datetime) -> Span:
    m = re.search(r"\b(today|yesterday|(this|last) (week|month|year))\b", text)
    if m is None:
        return None
    word, open_end = m.group(1), ref + timedelta(seconds=1)
    if word == "today":
        return day, open_end, word
    if word == "yesterday":
        return day - timedelta(days=1), day, word
    start, previous = _period_start(day, m.group(3))
    return (previous, start, word) if m.group(2) == "last" else (start, open_end, word)


def _period_start(day: datetime, unit: str) -> tuple[datetime, datetime]:
    """The start of the week, month or year holding ``day``, and of the one before."""
    if unit == "week":
        start = day - timedelta(days=day.weekday())
        return start, start - timedelta(days=7)
    if unit == "month":
        start = day.replace(day=1)
        return start, (start - timedelta(days=1)).replace(day=1)
    start = day.replace(month=1, day=1)
    return start, start.replace(year=start.year - 1)


def _ago(text: str, ref: datetime, day: datetime) -> Span:
    m = re.search(r"\b(\d{1,4}|a|an|one|two|three) (minute|hour|day|week)s? ago\b", text)
    if m is None:
        return None
    n = _count(m.group(1))
    if m.group(2) == "day":  # "3 days ago": that calendar day
        start = day - timedelta(days=n)
        return start, start + timedelta(days=1), m.group(0)
    width = _UNIT_S[m.group(2)]  # "2 hours ago": that moment, give or take half a unit
    centre = ref - timedelta(seconds=n * width)
    half = timedelta(seconds=width / 2)
    return centre - half, centre + half, m.group(0)


def _last_n(text: str, ref: datetime, day: datetime) -> Span:
    m = re.search(r"\b(?:in the|over the|during the|the) (?:last|past) (\d{1,4}|two|three)? ?"
                  r"(minute|hour|day|week)s?\b", text)
    if m is None:
        return None
    n = _count(m.group(1) or "1")
    return ref - timedelta(seconds=n * _UNIT_S[m.group(2)]), ref + timedelta(seconds=1), \
        m.group(0)


def _month_year(text: str, ref: datetime, day: datetime) -> Span:
    m = re.search(rf"\b(?:in|during|since|of) ({_MONTH})\.?(?: (\d{{4}}))?\b", text)
    if m is None:
        return None
    month = _MONTHS[m.group(1)]
    year = int(m.group(2)) if m.group(2) else (ref.year if month <= ref.month
                                                else ref.year - 1)
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return start, end, m.group(0)


def _day_month(text: str, ref: datetime, day: datetime) -> Span:
    m = (re.search(rf"\bon (?:the )?(\d{{1,2}})(?:st|nd|rd|th)?(?: of)? ({_MONTH})\.?"
                   rf"(?: (\d{{4}}))?\b", text)
         or re.search(rf"\bon ({_MONTH})\.? (\d{{1,2}})(?:st|nd|rd|th)?(?:,? (\d{{4}}))?\b",
                      text))
    if m is None:
        return None
    first, second, year_text = m.group(1), m.group(2), m.group(3)
    number, month_word = (first, second) if first.isdigit() else (second, first)
    month, number_i = _MONTHS[month_word], int(number)
    year = int(year_text) if year_text else ref.year
    try:
        start = datetime(year, month, number_i, tzinfo=UTC)
        if not year_text and start > ref:
            start = start.replace(year=year - 1)
    except ValueError:  # "on 31 February": no such day
        return None
    return start, start + timedelta(days=1), m.group(0)


def _year(text: str, ref: datetime, day: datetime) -> Span:
    m = re.search(r"\b(?:in|during) (\d{4})\b", text)
    if m is None or not 1970 <= int(m.group(1)) <= ref.year:
        return None
    year = int(m.group(1))
    return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC), m.group(0)


def _count(word: str) -> int:
    return {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}.get(word) or int(word)
