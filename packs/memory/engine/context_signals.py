"""Memory-context signals for recall: what a memory system knows that a flat retriever does not.

Generic over *threads* (a chat session, a meeting, a work episode) - nothing here knows about LoCoMo. A note
remembered without a ``thread`` is in an inferred episode of its scope (``threads.Episodes``: consecutive notes
within ``episode_gap_minutes``), so every signal below works without the caller's thread.
The query-time formulas recall ranks with are in ``ranking/adjusters.py`` (``adjusters.context``, over numpy columns,
``ranking/context_scores.py``); this module holds the write-time side and the experimental signals.

Signals and their measured effect (LoCoMo dev5, 999 questions, dialog-level
R@10, WordLlama; see ``bench/results/locomo.md`` for the full ablation):

1. **Thread-neighbour document expansion** (write time) - a note is indexed
   for full text with its own tokens plus ``weight`` (0.5) times the tokens of
   the previous and next note of the same thread.  A turn that answers a
   question ("Yes, last Tuesday!") becomes findable by the question's words.
   :class:`ThreadExpander` does it incrementally: adding a note returns the
   bags of the new note *and* of its thread neighbours (whose expansion changed),
   which the caller re-indexes (``BM25Index.add_weighted`` replaces by id).
2. **Neighbour score smoothing** (query time, ``ranking.context``) - ``s'_i = s_i + α·max(s_prev,
   s_next)`` over the fused candidate scores, neighbours inside the same
   thread; neighbours of candidates join the pool.
3. **Thread (session) propagation** (query time, ``ranking.context``) - each thread gets the mean
   of its top-3 candidate scores, normalised by the best thread, and every
   candidate adds ``β`` times its thread's value: evidence clusters in the
   episode where a topic was discussed.
3b. **Information prior** (query time, ``ranking.information_prior``) - a note a leg matched has its
   score multiplied by ``ln(e + I)``, ``I`` = Σ idf of the distinct words it says itself
   (``BM25Index.own_information``): greetings and acknowledgements that 1-3 lifted give way to the turn
   that answers.
4. **Date rendering** - ``occurred_at`` is rendered as words ("8 May 2023")
   into the indexed text so "in May 2023" matches by BM25/embedding.
Query-date windows and a speaker match were measured too, within noise on LoCoMo and not part of recall: they
live in ``bench/query_signals.py``.
"""

from __future__ import annotations

from palimpsest_memory.packs.memory.engine.dates import render_dated
from palimpsest_memory.packs.memory.engine.threads import ThreadExpander, ThreadLinks, expand_bag

__all__ = ["ThreadExpander", "ThreadLinks", "expand_bag", "render_dated"]
