"""Provenance survives clipping: a line cut to fit the token budget keeps its ``(src: ...)``
marker in the text (the text is shortened before it, never the marker)."""

from __future__ import annotations

import pytest
from domains import AS_OF, MARIA, UTTERANCE

from hopweave.engine.engine import Engine

#: Line kinds whose text carries an inline provenance marker (headers, notes, "none found"
#: lines carry none; a precedent line starts with its trace id).
MARKED = ("fact", "aggregate", "chunk")


@pytest.mark.parametrize("budget", [250, 300, 500, 1000])
def test_every_sourced_line_keeps_its_src_marker(engine: Engine, budget: int) -> None:
    r = engine.retrieve(UTTERANCE, session=MARIA, as_of=AS_OF, token_budget=budget, record=False)
    assert r.context.tokens <= budget
    marked = [ln for ln in r.context.lines if ln.kind in MARKED]
    assert marked, r.context.text
    for ln in marked:
        assert ln.sources and "(src: " in ln.text and ln.text.endswith(")"), ln.text
    for ln in r.context.lines:
        if ln.kind == "precedent":
            assert ln.text.startswith(ln.sources[0]), ln.text
    if budget == 300:  # the tight budget clips required lines: each keeps its marker after the "…"
        clipped = [ln for ln in marked if " …  (src: " in ln.text]
        assert clipped, r.context.text
