"""How hard the scale corpus is: similarity of generated distractors to the scenarios' expected passages.

For every chunk a DeltaBank scenario expects (``expect.chunks``), the distractors are the generated
chunks that pass the same metadata and in-force filter as that passage (same tenant, tier,
product, policy type and region; active; in force on a day the passage is: their
``valid_from``/``valid_until`` intervals overlap): the chunks the ranking has to put below it.
(Until generator v4 the report counted current revisions instead of in-force ones; v4 and v5
are compared here with the in-force definition, which is what the engine's filter applies.)
Similarity = cosine of BM25-weighted term vectors (the engine's tokenizer; idf over the generated
corpus) of ``title. text``, the text the engine embeds. Run for two generator versions, the report
shows whether a change of the generator made the corpus easier.

Usage: python benchmarks/scale_difficulty.py --chunks 50000 [--baseline path/to/old/scale.py]
       python benchmarks/scale_difficulty.py --pack examples/telecom --chunks 50000
(``--pack``: any pack, its corpus restated by hopweave.pack.scale_corpus as benchmarks/scale_pack.py
builds it; the fields compared are the pack's own: every metadata field of the passage's document
but its identity and lifecycle fields.)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "deltabank"))

from hopweave.models.schema import GraphSchema  # noqa: E402
from hopweave.pack.corpus import load_corpus  # noqa: E402
from hopweave.search.chunker import chunk_document  # noqa: E402
from hopweave.search.lexical import Tokenizer  # noqa: E402

KEYS = ("tier", "product", "policy_type", "region")


def expected_chunks(pack: Path = ROOT / "examples" / "deltabank") -> list[str]:
    """``document#section`` of every chunk a pack's scenario expects (sorted, distinct)."""
    import yaml

    out: set[str] = set()
    for p in sorted((pack / "scenarios").glob("*.yaml")):
        out.update((yaml.safe_load(p.read_text()).get("expect") or {}).get("chunks") or [])
    return sorted(out)


def _vec(tok: Tokenizer, text: str, idf: dict[str, float]) -> dict[str, float]:
    tf = Counter(tok.tokenize(text))
    v = {t: (1 + math.log(n)) * idf.get(t, 1.0) for t, n in tf.items()}
    norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
    return {t: x / norm for t, x in v.items()}


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two chunks' in-force intervals [valid_from, valid_until) share a day."""
    lo = max(str(a.get("valid_from") or ""), str(b.get("valid_from") or ""))
    hi = min(str(a.get("valid_until") or "9999"), str(b.get("valid_until") or "9999"))
    return lo < hi


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return round(s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))], 3) if s else 0.0


def difficulty(scale_module: Any, chunks: int) -> dict[str, Any]:
    """Per expected passage: distractor count and similarity percentiles (p50, p90, p99, max)."""
    tok = Tokenizer()
    ex = ROOT / "examples" / "deltabank"
    example = {f"{c.metadata.get('document')}#{c.section}": c for d in
               load_corpus(ex / "corpus", GraphSchema.load(ex / "schema.yaml"), "deltabank") for c in chunk_document(d)}
    gen = [c for d in scale_module.scale_documents(chunks) for c in chunk_document(d, version=d.version)
           if d.tenant_id == "deltabank" and d.metadata.get("status") == "active"]
    df: Counter[str] = Counter()
    for c in gen:
        df.update(set(tok.tokenize(c.rerank_text())))
    idf = {t: math.log(1 + len(gen) / n) for t, n in df.items()}
    vecs = [_vec(tok, c.rerank_text(), idf) for c in gen]
    rows = {}
    for key in expected_chunks():
        e = example.get(key)
        if e is None:
            continue
        ev = _vec(tok, e.rerank_text(), idf)
        sims = [sum(w * v.get(t, 0.0) for t, w in ev.items()) for c, v in zip(gen, vecs)
                if all(c.metadata.get(k) == e.metadata.get(k) for k in KEYS) and _overlap(c.metadata, e.metadata)]
        rows[key] = {"distractors": len(sims), "p50": _pct(sims, 0.5), "p90": _pct(sims, 0.9),
                     "p99": _pct(sims, 0.99), "max": _pct(sims, 1.0),
                     "over_0.5": sum(s > 0.5 for s in sims)}
    return rows


def pack_difficulty(pack: Path, chunks: int, seed: int = 4421) -> dict[str, Any]:
    """:func:`difficulty` for any pack: its corpus restated by ``scale_corpus`` (the pack's
    tenants mirrored, as ``scale_pack.py`` builds the store), fields compared = the passage's
    document's cell (``cell_of``) but lifecycle and language."""
    from hopweave.pack.scale_corpus import cell_of, load_pack_documents, scale_corpus

    tok = Tokenizer()
    pack_docs, tenants = load_pack_documents(pack)
    lifecycle = {"version", "status", "valid_until", "language", "kind"}
    example = {f"{c.metadata.get('document')}#{c.section}": (c, d) for d in pack_docs for c in chunk_document(d)}
    gen_docs = [d for d in scale_corpus(pack_docs, chunks, seed, mirror_tenants=tenants)
                if d.metadata.get("status") == "active"]
    gen = [(c, d) for d in gen_docs for c in chunk_document(d, version=d.version)]
    df: Counter[str] = Counter()
    for c, _ in gen:
        df.update(set(tok.tokenize(c.rerank_text())))
    idf = {t: math.log(1 + len(gen) / n) for t, n in df.items()}
    vecs = [_vec(tok, c.rerank_text(), idf) for c, _ in gen]
    rows = {}
    for key in expected_chunks(pack):
        if key not in example:
            continue
        e, src = example[key]
        want = {k: v for k, v in cell_of(src).items() if k not in lifecycle}
        ev = _vec(tok, e.rerank_text(), idf)
        sims = [sum(w * v.get(t, 0.0) for t, w in ev.items()) for (c, d), v in zip(gen, vecs)
                if all(cell_of(d).get(k) == x for k, x in want.items()) and _overlap(c.metadata, e.metadata)]
        rows[key] = {"distractors": len(sims), "p50": _pct(sims, 0.5), "p90": _pct(sims, 0.9),
                     "p99": _pct(sims, 0.99), "max": _pct(sims, 1.0), "over_0.5": sum(s > 0.5 for s in sims)}
    return rows


def _load(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"generator.{name}", path, submodule_search_locations=None)
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = mod  # type: ignore[union-attr]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=50_000)
    ap.add_argument("--baseline", type=Path, default=None, help="an older generator/scale.py to compare with")
    ap.add_argument("--pack", type=Path, default=None, help="any pack: its scale_corpus restatements")
    args = ap.parse_args()
    if args.pack is not None:
        print(json.dumps({"scale_corpus": pack_difficulty(args.pack, args.chunks)}, indent=1, sort_keys=True))
        return
    cur = _load(ROOT / "examples" / "deltabank" / "generator" / "scale.py", "scale_now")
    res = {f"v{cur.GENERATOR_VERSION}": difficulty(cur, args.chunks)}
    if args.baseline:
        old = _load(args.baseline, "scale_before")
        res[f"v{old.GENERATOR_VERSION}"] = difficulty(old, args.chunks)
    print(json.dumps(res, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
