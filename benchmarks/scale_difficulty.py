"""How hard the scale corpus is: similarity of generated distractors to the scenarios' expected passages.

For every chunk a DeltaBank scenario expects (``expect.chunks``), the distractors are the generated
chunks that pass the same lifecycle and metadata filter as that passage (same tenant, tier,
product, policy type and region; current and active): the chunks the ranking has to put below it.
Similarity = cosine of BM25-weighted term vectors (the engine's tokenizer; idf over the generated
corpus) of ``title. text``, the text the engine embeds. Run for two generator versions, the report
shows whether a change of the generator made the corpus easier.

Usage: python benchmarks/scale_difficulty.py --chunks 50000 [--baseline path/to/old/scale.py]
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


def expected_chunks() -> list[str]:
    """``document#section`` of every chunk a DeltaBank scenario expects (sorted, distinct)."""
    import yaml

    out: set[str] = set()
    for p in sorted((ROOT / "examples" / "deltabank" / "scenarios").glob("*.yaml")):
        out.update((yaml.safe_load(p.read_text()).get("expect") or {}).get("chunks") or [])
    return sorted(out)


def _vec(tok: Tokenizer, text: str, idf: dict[str, float]) -> dict[str, float]:
    tf = Counter(tok.tokenize(text))
    v = {t: (1 + math.log(n)) * idf.get(t, 1.0) for t, n in tf.items()}
    norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
    return {t: x / norm for t, x in v.items()}


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return round(s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))], 3) if s else 0.0


def difficulty(scale_module: Any, chunks: int) -> dict[str, Any]:
    """Per expected passage: distractor count and similarity percentiles (p50, p90, p99, max)."""
    tok = Tokenizer()
    ex = ROOT / "examples" / "deltabank"
    example = {f"{c.metadata.get('document')}#{c.section}": c for d in
               load_corpus(ex / "corpus", GraphSchema.load(ex / "schema.yaml"), "deltabank") for c in chunk_document(d)}
    gen = [c for d in scale_module.scale_documents(chunks) for c in chunk_document(d)
           if d.tenant_id == "deltabank" and d.version == "current" and d.metadata.get("status") == "active"]
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
                if all(c.metadata.get(k) == e.metadata.get(k) for k in KEYS)]
        rows[key] = {"distractors": len(sims), "p50": _pct(sims, 0.5), "p90": _pct(sims, 0.9),
                     "p99": _pct(sims, 0.99), "max": _pct(sims, 1.0),
                     "over_0.5": sum(s > 0.5 for s in sims)}
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
    args = ap.parse_args()
    cur = _load(ROOT / "examples" / "deltabank" / "generator" / "scale.py", "scale_now")
    res = {f"v{cur.GENERATOR_VERSION}": difficulty(cur, args.chunks)}
    if args.baseline:
        old = _load(args.baseline, "scale_before")
        res[f"v{old.GENERATOR_VERSION}"] = difficulty(old, args.chunks)
    print(json.dumps(res, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
