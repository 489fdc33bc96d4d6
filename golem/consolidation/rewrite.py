"""The deterministic working-memory rewrite: New = f(Old, scratch, crystals, insights) (seed 004).

Pure: plain data in, text out, no I/O and no clock; the same inputs give the same
bytes. It is the synthesis used when no model is configured (and the draft a
model may refine). What it does, in order:

- Scratch notes go to the section they belong to (``route``: questions to
  Curiosity Gaps, constraints to Owner and Mandate, patterns to Emerging Skills,
  results to Niche, self-descriptions to Self-Concept, the rest to Active
  Context); notes below ``low_importance`` go straight to a crystal pointer.
- Dream insights: confident ones (>= ``skill_confidence``) become Emerging
  Skills, the rest Curiosity Gaps ("hypothesis to test"). New crystals become
  crystal pointers. Anything already present (same crystal id) is not added again,
  so a cycle replayed after a crash changes nothing twice.
- Faded topics (Active Context lines older than ``fade_after_s``) and, when the
  state is over its size target, the least important and oldest lines of the
  section most over its share fold into crystal pointers carrying the ids of the
  crystals that hold them. A folded line with no crystal yet gets one (returned in
  ``to_index``; the caller stores it before the write): never silently dropped.
- Pointers stay at most ``max_pointers`` (below the eviction-runaway guard) and
  within their share of the size by merging the oldest two (ids capped at 16;
  the keywords still find the rest).

Seed-crystal migration: an existing MEMORY.md that does not parse into the schema
(hand-written) is migrated. Its text is chunked into seed crystals (``to_index``),
and the new state is the schema plus a "Seed Memory" section holding the original
verbatim (headings demoted two levels so they cannot clash with the schema). That
first cycle is conservative: nothing is evicted, faded or folded (notes, insights
and crystals are only added), and the size cap is raised to whatever that needs,
so the mass-drop guard holds. Later cycles take over gradually: at most
``seed_fold_chars`` of the seed section per cycle fold into pointers, and a state
over the cap shrinks by at most 40% per cycle until it fits.
"""

from __future__ import annotations

from golem.consolidation import memory_items as mi
from golem.consolidation.memory_items import (
    POINTERS,
    SHARE,
    Crystal,
    Insight,
    Item,
    Note,
    Rewrite,
    RewriteInputs,
    RewriteParams,
    ToIndex,
    route,
)
from golem.consolidation.seed_migration import (
    SEED_HEADING,
    allowed_chars,
    demote,
    needs_migration,
    seed_chunks,
)
from golem.grimoire.working_memory import (
    SECTIONS,
    TITLE,
    CrystalPointer,
    MemorySection,
    WorkingMemory,
    parse_memory,
    render_memory,
    starter_memory,
)

__all__ = ["Crystal", "Insight", "Note", "Rewrite", "RewriteInputs", "RewriteParams",
           "synthesise"]


def synthesise(inputs: RewriteInputs, params: RewriteParams | None = None) -> Rewrite:
    return _Synthesis(inputs, params or RewriteParams()).run()


class _Synthesis:
    def __init__(self, inp: RewriteInputs, p: RewriteParams) -> None:
        self.inp, self.p = inp, p
        self.migrated = needs_migration(inp.old_text)
        self.to_index: dict[str, ToIndex] = {}
        self.groups: dict[str, list[Item]] = {}
        self.pointer_hints: list[Item] = []
        self.folded = self.merged = 0
        old = None if inp.old_text is None or self.migrated else parse_memory(inp.old_text)
        base = old or starter_memory(inp.name, inp.mandate)
        self.base = base
        self.headings = {s.key: s.heading for s in base.sections if s.key}
        self.items: dict[str, list[Item]] = {}
        self.extras: list[tuple[str, list[Item]]] = []
        self.pointers: list[CrystalPointer] = []
        self.placed: dict[str, int] = {}
        for sec in base.sections:
            if sec.key == POINTERS:
                self._load_pointers(sec.body)
            elif sec.key and sec.key not in self.items:
                owner = sec.key == "owner_and_mandate"
                self.items[sec.key] = [
                    mi.Item(i.text, i.importance, i.at, i.crystal, True)
                    if owner and i.text.startswith("Mandate:") else i
                    for i in mi.split_body(sec.body)]
            elif sec.key is None:
                seed = sec.heading == SEED_HEADING
                self.extras.append((sec.heading, mi.split_body(sec.body, paragraphs=seed)))
        if self.migrated and inp.old_text is not None:
            self.extras.append((SEED_HEADING, mi.split_body(demote(inp.old_text), paragraphs=True)))
            for cid, text in seed_chunks(inp.old_text):
                self.to_index[cid] = (cid, text, 0.75)
        self.placeholders = self._placeholders()
        self.known = {i.crystal for its in self.items.values() for i in its if i.crystal}
        self.known |= {c for ptr in self.pointers for c in ptr.crystal_ids}

    def _load_pointers(self, body: str) -> None:
        for item in mi.split_body(body):
            ptr = CrystalPointer.parse(item.text) if "\n" not in item.text else None
            if ptr is not None:
                self.pointers.append(ptr)
            elif item.protected or item.blank or not item.text.lstrip().startswith(("-", "*")):
                self.pointer_hints.append(item)
            else:  # a malformed pointer line: keep what it says as a crystal
                self._fold(POINTERS, item)

    def _placeholders(self) -> set[str]:
        try:
            start = starter_memory(self.inp.name, self.inp.mandate)
        except ValueError:
            return set()
        return {i.text for s in start.sections for i in mi.split_body(s.body)
                if not i.protected and not i.text.startswith("Mandate:")}

    # -- adding ---------------------------------------------------------------------------

    def _add(self, key: str, item: Item) -> None:
        assert item.crystal is not None
        self.known.add(item.crystal)
        if key not in self.placed:  # the first real line replaces the starter's placeholder
            self.items[key] = [i for i in self.items[key] if i.text not in self.placeholders]
        self.items[key].append(item)
        self.placed[key] = self.placed.get(key, 0) + 1

    def add_inputs(self) -> None:
        p, now = self.p, self.inp.now
        for nid, text, imp, at in sorted(self.inp.notes, key=lambda n: (n[3], n[0])):
            cid = f"scratch-{nid}"
            if cid in self.known:
                continue
            item = mi.tagged(text, imp, at, cid, p.line_chars)
            if imp < p.low_importance:
                self.known.add(cid)
                self._fold("minor notes", item)
            else:
                self._add(route(text), item)
        for iid, text, conf in self.inp.insights:
            if iid in self.known:
                continue
            skill = conf >= p.skill_confidence
            line = (f"{text} (confidence {conf:.0%})" if skill
                    else f"Hypothesis to test: {text} (confidence {conf:.0%})")
            item = mi.tagged(line, conf, now, iid, p.line_chars)
            self._add("emerging_skills" if skill else "curiosity_gaps", item)
        for cid, label, words in self.inp.crystals:
            if cid in self.known:
                continue
            self.known.add(cid)
            same = next((k for k, ptr in enumerate(self.pointers)
                         if ptr.label == mi.safe_label(label, 160)), None)
            if same is None:
                self.pointers.append(mi.pointer(label, [*words] or mi.keywords([label]), [cid]))
            else:
                old = self.pointers[same]
                self.pointers[same] = mi.pointer(label, [*old.keywords, *words],
                                                 [*old.crystal_ids, cid])

    # -- folding --------------------------------------------------------------------------

    def _fold(self, group: str, item: Item) -> int:
        """Move ``item`` into a pointer group; returns the chars that saves (about)."""
        self.groups.setdefault(group, []).append(item)
        if item.crystal is None:
            cid = item.crystal_id()
            self.to_index.setdefault(cid, (cid, mi.plain(item.text), item.importance))
        self.folded += 1
        return len(item.text) - len(item.crystal_id()) - 1

    def _fold_worst(self, key: str, over: int) -> bool:
        items = self._items_of(key)
        picked = mi.pick_worst(items, over)
        for n in picked:
            self._fold(self.headings.get(key, key), items[n])
        for n in sorted(picked, reverse=True):
            del items[n]
        return bool(picked)

    def _group_pointers(self) -> list[CrystalPointer]:
        return mi.group_pointers(self.groups, self.inp.now)

    def _all_pointers(self) -> list[CrystalPointer]:
        ptrs = self.pointers + self._group_pointers()
        while len(ptrs) > self.p.max_pointers:
            ptrs = [mi.merge(ptrs[0], ptrs[1]), *ptrs[2:]]
        return ptrs

    def fade_and_fit(self, old_len: int, target: int) -> None:
        """Fold faded lines, a slice of seed text, then the worst lines until under target.

        Sizes are estimated per fold (the text leaves, its id joins a pointer) and the
        state is rendered only when the estimate says done: linear, not quadratic."""
        p = self.p
        size, floor = len(self.render()), p.min_keep_ratio * old_len
        active = self.items.get("active_context", [])
        for item in sorted((i for i in active if i.at is not None and not i.protected),
                           key=lambda i: i.at or 0.0):
            if (item.at or 0.0) >= self.inp.now - p.fade_after_s or size < floor:
                break
            active.remove(item)
            size -= self._fold(self.headings["active_context"], item)
        for heading, items in self.extras:
            budget = p.seed_fold_chars if heading == SEED_HEADING else 0
            while budget > 0 and any(not i.blank for i in items):
                first = next(i for i in items if not i.blank)
                budget -= len(first.text)
                items.remove(first)
                self._fold("Seed memory", first)
        self.extras = [(h, its) for h, its in self.extras if any(not i.blank for i in its)]
        size = len(self.render())
        while size > target:
            if self._pointer_chars() > SHARE[POINTERS] * target and self._merge_oldest():
                size = len(self.render())
                continue
            excess = sorted(((sum(len(i.text) + 1 for i in its) - SHARE.get(k, 0) * target, n, k)
                             for n, (k, its) in enumerate(self._foldable())), reverse=True)
            folded = next((True for _, _, k in excess if self._fold_worst(k, size - target)),
                          False)
            if not folded and not self._merge_oldest():
                break
            size = len(self.render())

    def _pointer_chars(self) -> int:
        return sum(len(ptr.render()) + 1 for ptr in self._all_pointers())

    def _merge_oldest(self) -> bool:
        """Fix the folded groups as pointers and merge the oldest two (ids capped at 16)."""
        self.pointers, self.groups = self.pointers + self._group_pointers(), {}
        if len(self.pointers) < 2:
            return False
        self.pointers = [mi.merge(self.pointers[0], self.pointers[1]), *self.pointers[2:]]
        self.merged += 1
        return True

    def _foldable(self) -> list[tuple[str, list[Item]]]:
        return [*self.items.items(), *self.extras]

    def _items_of(self, key: str) -> list[Item]:
        return dict(self._foldable())[key]

    # -- output ---------------------------------------------------------------------------

    def state(self) -> WorkingMemory:
        sections = []
        for key, heading in SECTIONS:
            if key == POINTERS:
                hints = mi.join_items(self.pointer_hints)
                lines = "\n".join(ptr.render() for ptr in self._all_pointers())
                body = "\n\n".join(x for x in (hints, lines) if x)
            else:
                body = mi.join_items(self.items.get(key, []))
            sections.append(MemorySection(self.headings.get(key, heading), body))
        sections += [MemorySection(h, mi.join_items(its)) for h, its in self.extras]
        mood = self.inp.mood if self.inp.mood is not None else self.base.mood
        preamble = "" if self.migrated else self.base.preamble
        return WorkingMemory(tuple(sections), TITLE, self.inp.now, mood, preamble)

    def render(self) -> str:
        return render_memory(self.state())

    def run(self) -> Rewrite:
        self.add_inputs()
        old_len = len(self.inp.old_text.strip()) if self.inp.old_text else 0
        p = self.p
        if self.migrated:
            text = self.render()
            cap = max(p.max_chars, len(text))
        else:
            cap = allowed_chars(self.inp.old_text, p.max_chars, p.min_keep_ratio)
            self.fade_and_fit(old_len, cap - (p.max_chars - p.target_chars))
            text = self.render()
        merges = max(0, len(self.pointers) + len(self._group_pointers()) - p.max_pointers)
        return Rewrite(text, cap, tuple(self.to_index.values()), dict(self.placed),
                       self.folded, self.merged + merges, self.migrated)
