"""Search benchmarks: SciFact ablation, hybrid latency, ingestion throughput, filtered search at 50k.

Usage (from the repo root, venv active):

    python benchmarks/bench_search.py --data ../shared/data/scifact --split test --out bench_search.json
    python benchmarks/bench_search.py --only filtered      # just the 50k filtered-search part

Parts:
  ablation  every published profile + bi-encoder rerank on the frozen SciFact index (same as
            `hopweave eval ablation --json`), with paired bootstrap CIs vs the best single channel.
  ingest    Ingestor throughput on synthetic policy documents (chunk + embed + BM25 + upsert), and
            index-only throughput (BM25 + upsert of pre-embedded points).
  filtered  50,000 synthetic points (random unit vectors, BM25 text from a policy vocabulary),
            a filter selecting ~8,000; hybrid p50/p95 of index.search (plus measured query
            embedding p50 for the end-to-end figure).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

import deltabank_pack
import numpy as np

from hopweave.models.documents import Document
from hopweave.models.filters import And, Eq, In


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return round(s[lo] + (s[hi] - s[lo]) * (k - lo), 2)


def machine() -> dict:
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
        "processor": platform.processor() or platform.machine(), "loadavg_at_start": load,
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }


def bench_ablation(data: Path, split: str, cache: Path | None) -> dict:
    from hopweave.search.embedder import default_embedder
    from hopweave.search.eval.beir import load_beir
    from hopweave.search.eval.runner import EVAL_TENANT, build_index, compare, evaluate
    from hopweave.search.profiles import default_profile, list_profiles
    from hopweave.search.rerank import BiEncoderReranker

    ds = load_beir(data, split)
    emb = default_embedder()
    index, info = build_index(ds, emb, cache_dir=cache)
    runs = [evaluate(index, ds, p, emb) for p in list_profiles()]
    runs.append(evaluate(index, ds, default_profile(), emb, reranker=BiEncoderReranker(emb, lambda ids: index.dense_vectors(EVAL_TENANT, ids, emb.space)), top_n=40))
    index.close()
    cmp = compare(runs)
    rows = [dict(r.row(), vs_baseline=cmp["intervals"].get(r.name)) for r in runs]
    return {"dataset": ds.name, "split": split, "queries": len(ds.queries), "baseline": cmp["baseline"], "rows": rows, "index": info}


VOCAB = (
    "late fee waiver platinum gold silver standard card payment dispute refund fraud claim limit "
    "overdraft courtesy annual escalation hardship account customer statement interest branch "
    "phone chat agent policy eligible standing calendar year discretion approval supervisor "
    "record decision transaction balance minimum due date grace period notice region currency"
).split()


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(n))


def bench_ingest(n_docs: int = 60) -> dict:
    from hopweave.search.edge_index import EdgeIndex
    from hopweave.search.embedder import default_embedder
    from hopweave.search.ingest import Ingestor

    schema = deltabank_pack.schema()
    emb = default_embedder()
    rng = random.Random(0)
    docs = []
    for i in range(n_docs):
        body = "\n\n".join(f"## {s} Section {s}\n{_text(rng, 120)}" for s in range(1, 5))
        docs.append(Document(document_id=f"doc{i}", tenant_id="bench", text=body, title=f"Policy {i}",
                             metadata={"tier": rng.choice(["Gold", "Platinum"]), "region": "US"}))
    with tempfile.TemporaryDirectory() as d:
        idx = EdgeIndex(d, schema)
        rep = Ingestor(idx, emb).ingest(docs)
        t = time.perf_counter()
        rep2 = Ingestor(idx, emb).ingest(docs)
        noop = time.perf_counter() - t
        idx.close()
    return {
        "documents": n_docs, "chunks": rep.chunks_written, "seconds": round(rep.elapsed_s, 2),
        "chunks_per_s": round(rep.chunks_written / rep.elapsed_s, 1),
        "reingest_unchanged_s": round(noop, 3), "reingest_unchanged": rep2.unchanged,
    }


def bench_filtered(n: int = 50_000, queries: int = 200) -> dict:
    from hopweave.search.edge_index import EdgeIndex
    from hopweave.search.embedder import EmbeddingSpace, default_embedder
    from hopweave.search.index_base import SPACE_FIELD, CollectionInfo, IndexPoint
    from hopweave.search.profiles import default_profile

    schema = deltabank_pack.schema()
    space = EmbeddingSpace(provider="bench", model="random", revision="1", dimensions=384)
    rng = random.Random(1)
    nrng = np.random.default_rng(1)
    tiers, products, ptypes, regions = ["Platinum", "Gold", "Silver", "Standard"], ["Platinum_Card", "Gold_Card", "Checking"], ["LateFeeWaiver", "FeeSchedule", "FraudClaim", "CreditLimit"], ["US", "EU", "CA"]
    out: dict = {"points": n}
    with tempfile.TemporaryDirectory() as d:
        idx = EdgeIndex(d, schema)
        info = idx.ensure_collection(CollectionInfo(space=space, avg_len=40.0))
        enc = info.encoder()
        t0 = time.perf_counter()
        batch = []
        for i in range(n):
            text = _text(rng, rng.randint(20, 60))
            v = nrng.normal(size=384).astype(np.float32)
            v /= np.linalg.norm(v)
            p = {"tenant_id": "deltabank", "chunk_id": f"c{i:06d}", "document_id": f"d{i // 8}", "text": text,
                 "title": "Policy", "version": "current", "status": "active",
                 "tier": rng.choices(tiers, weights=[4, 3, 2, 1])[0], "product": rng.choice(products),
                 "policy_type": rng.choice(ptypes), "region": rng.choices(regions, weights=[6, 2, 2])[0],
                 SPACE_FIELD: space.key}
            batch.append(IndexPoint(p["chunk_id"], p, enc.encode_document(text, "Policy"), v))
            if len(batch) == 1000:
                idx.upsert("deltabank", batch)
                batch = []
        if batch:
            idx.upsert("deltabank", batch)
        t_load = time.perf_counter() - t0
        t1 = time.perf_counter()
        idx.optimize()
        t_opt = time.perf_counter() - t1
        flt = And(clauses=(Eq(field="tier", value="Platinum"), In(field="policy_type", values=("LateFeeWaiver", "FeeSchedule")),
                           In(field="region", values=("US", "CA"))))
        eligible = idx.count("deltabank", flt)
        prof = default_profile()
        qv = [nrng.normal(size=384).astype(np.float32) for _ in range(queries)]
        qs = [_text(rng, 12) for _ in range(queries)]
        for i in range(10):
            idx.search("deltabank", qs[i], prof, where=flt, query_vector=qv[i], query_space=space)
        lat, chan = [], []
        for q, v in zip(qs, qv):
            t = time.perf_counter()
            r = idx.search("deltabank", q, prof, where=flt, query_vector=v / np.linalg.norm(v), query_space=space)
            lat.append((time.perf_counter() - t) * 1000)
            chan.append(r.timings_ms["channels"])
        idx.close()
    emb = default_embedder()
    emb.embed(["warm up"])
    et = []
    for q in qs[:100]:
        t = time.perf_counter()
        emb.embed_uncached([q + " ?"])
        et.append((time.perf_counter() - t) * 1000)
    out.update(
        eligible=eligible, load_s=round(t_load, 1), load_points_per_s=round(n / t_load), optimize_s=round(t_opt, 1),
        search_p50_ms=_pct(lat, 0.5), search_p95_ms=_pct(lat, 0.95), channels_p50_ms=_pct(chan, 0.5),
        query_embedding_p50_ms=_pct(et, 0.5),
        end_to_end_p50_ms=round(_pct(lat, 0.5) + _pct(et, 0.5), 2),
    )
    return out


def _cpu_p50(f, n: int, clock=time.process_time) -> float:
    """Median milliseconds of f(i) after 5 warm-up calls, by ``clock``: CPU time of all threads of
    this process by default, ``time.perf_counter`` for wall time."""
    for i in range(min(5, n)):
        f(i)
    ts = []
    for i in range(n):
        t = clock()
        f(i)
        ts.append((clock() - t) * 1000)
    return round(_pct(ts, 0.5), 2)


def _wall_p50(f, n: int) -> float:
    """Median wall milliseconds of f(i) (after 5 warm-up calls)."""
    return _cpu_p50(f, n, time.perf_counter)


def _scale_points(n: int, space, enc):
    """The synthetic points of the scale benchmark, in batches of 1,000 (seeded: identical runs)."""
    from hopweave.search.index_base import SPACE_FIELD, IndexPoint

    rng, nrng = random.Random(1), np.random.default_rng(1)
    batch = []
    for i in range(n):
        text = _text(rng, rng.randint(20, 60))
        v = nrng.normal(size=384).astype(np.float32)
        p = {"tenant_id": "deltabank", "chunk_id": f"c{i:06d}", "document_id": f"d{i // 8}", "text": text,
             "title": "Policy", "version": "current", "status": "active",
             "tier": rng.choices(["Platinum", "Gold", "Silver", "Standard"], weights=[4, 3, 2, 1])[0],
             "product": rng.choice(["Platinum_Card", "Gold_Card", "Checking"]),
             "policy_type": rng.choice(["LateFeeWaiver", "FeeSchedule", "FraudClaim", "CreditLimit"]),
             "region": rng.choices(["US", "EU", "CA"], weights=[6, 2, 2])[0], SPACE_FIELD: space.key}
        batch.append(IndexPoint(p["chunk_id"], p, enc.encode_document(text, "Policy"), v / np.linalg.norm(v)))
        if len(batch) == 1000 or i == n - 1:
            yield batch
            batch = []


def scale_index(n: int, root: Path | None) -> tuple[object, dict, object]:
    """(EdgeIndex, build info, temp dir or None) of the ``n``-point scale set-up: reopened from
    ``root/<n>`` when a complete build is there (its ``build.json`` keeps the load and optimize
    times of the run that built it), else built there (or in a temporary directory)."""
    from hopweave.search.edge_index import EdgeIndex
    from hopweave.search.embedder import EmbeddingSpace
    from hopweave.search.index_base import CollectionInfo

    schema = deltabank_pack.schema()
    space = EmbeddingSpace(provider="bench", model="random", revision="1", dimensions=384)
    tmp = None
    if root is None:
        tmp = tempfile.TemporaryDirectory()
        store = Path(tmp.name)
    else:
        store = root / str(n)
    meta = store / "build.json"
    if meta.is_file():
        idx = EdgeIndex(store, schema)
        idx.require_info()
        return idx, {**json.loads(meta.read_text()), "reused": True}, tmp
    idx = EdgeIndex(store, schema)
    enc = idx.ensure_collection(CollectionInfo(space=space, avg_len=40.0)).encoder()
    info: dict = {"points": n, "loadavg_before": os.getloadavg(), "built": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    t0 = time.perf_counter()
    for batch in _scale_points(n, space, enc):
        idx.upsert("deltabank", batch)
    info["load_s"] = round(time.perf_counter() - t0, 1)
    info["load_points_per_s"] = round(n / (time.perf_counter() - t0))
    t1 = time.perf_counter()
    idx.optimize()
    info["optimize_s"] = round(time.perf_counter() - t1, 1)
    idx.flush()
    info["loadavg_after"] = os.getloadavg()
    if root is not None:
        meta.write_text(json.dumps(info, indent=1))
    return idx, {**info, "reused": False}, tmp


def bench_scale_channels(n: int, queries: int = 60, profiles: tuple[str, ...] = ("hybrid_convex_v1",),
                         root: Path | None = None) -> dict:
    """Where a filtered search spends CPU at ``n`` points (issue 17): the same synthetic set-up
    as :func:`bench_filtered`; per query, median CPU ms of the whole search per profile, of the
    BM25 channel with IDF over the filter / over the collection / without filter, of the dense
    channel and of an exact filtered count. CPU time, because wall time on a shared machine
    mostly measures the other jobs."""
    from hopweave.search.index_base import DENSE, LEXICAL, ChannelRequest
    from hopweave.search.profiles import get_profile

    idx, build, tmp = scale_index(n, root)
    space = idx.require_info().space
    enc = idx.require_info().encoder()
    out: dict = {"points": n, **{k: build[k] for k in ("load_s", "load_points_per_s", "optimize_s", "reused")}}
    flt = And(clauses=(Eq(field="tier", value="Platinum"), In(field="policy_type", values=("LateFeeWaiver", "FeeSchedule")),
                       In(field="region", values=("US", "CA"))))
    out["eligible"] = idx.count("deltabank", flt)
    qrng, qn = random.Random(7), np.random.default_rng(7)
    qs = [_text(qrng, 12) for _ in range(queries)]
    qv = [x / np.linalg.norm(x) for x in (qn.normal(size=384).astype(np.float32) for _ in range(queries))]
    search = lambda prof: lambda i: idx.search("deltabank", qs[i], prof, where=flt, query_vector=qv[i],  # noqa: E731
                                                 query_space=space)
    for name in profiles:
        prof = get_profile(name)
        for cache in (False, True):  # IDF computed by the engine per query / the filtered-IDF cache
            idx.idf_cache_enabled, idx._idf = cache, None
            tag = f"{name}{', idf cache' if cache else ''}"
            out[f"search_cpu_ms[{tag}]"] = _cpu_p50(search(prof), queries)
            out[f"search_wall_ms[{tag}]"] = _wall_p50(search(prof), queries)
    comp = idx._compile(idx.scoped_filter("deltabank", flt, True))
    lex = lambda i, f, idf: idx._query([ChannelRequest(LEXICAL, enc.encode_query(qs[i]), f, 201, idf_filter=idf)])  # noqa: E731
    out["bm25_filtered_idf_cpu_ms"] = _cpu_p50(lambda i: lex(i, comp, comp), queries)
    out["bm25_collection_idf_cpu_ms"] = _cpu_p50(lambda i: lex(i, comp, None), queries)
    out["bm25_no_filter_cpu_ms"] = _cpu_p50(lambda i: lex(i, None, None), queries)
    out["dense_cpu_ms"] = _cpu_p50(lambda i: idx._query([ChannelRequest(DENSE, qv[i].tolist(), comp, 51)]), queries)
    out["count_cpu_ms"] = _cpu_p50(lambda i: idx._count(comp), queries)
    out["loadavg"] = os.getloadavg()
    idx.close()
    if tmp is not None:
        tmp.cleanup()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("../shared/data/scifact"))
    ap.add_argument("--split", default="test")
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--only", choices=["ablation", "ingest", "filtered", "scale"], default=None)
    ap.add_argument("--points", type=int, nargs="+", default=[5_000, 50_000],
                    help="sizes for --only scale (issue 17 growth curve; 500000 takes hours to optimize)")
    ap.add_argument("--store-root", type=Path, default=None,
                    help="--only scale: build each size once under DIR/<points> and reuse it (500k builds are heavy)")
    ap.add_argument("--build-only", action="store_true", help="--only scale: build (or find) the indexes, measure nothing")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    res: dict = {"machine": machine(), "command": " ".join(sys.argv)}
    parts = [args.only] if args.only else ["ablation", "ingest", "filtered"]
    for part in parts:
        t = time.perf_counter()
        if part == "ablation":
            res[part] = bench_ablation(args.data, args.split, args.cache)
        elif part == "ingest":
            res[part] = bench_ingest()
        elif part == "scale":
            if args.build_only:
                res[part] = {"builds": []}
                for n in args.points:
                    idx, build, _ = scale_index(n, args.store_root)
                    idx.close()
                    res[part]["builds"].append(build)
            else:
                res[part] = {"sizes": [bench_scale_channels(n, profiles=("hybrid_convex_v1", "hybrid_features_v2"),
                                                            root=args.store_root) for n in args.points]}
        else:
            res[part] = bench_filtered()
        res[part]["wall_s"] = round(time.perf_counter() - t, 1)
        print(json.dumps({part: res[part]}, indent=2), flush=True)
    res["machine"]["loadavg_at_end"] = os.getloadavg()
    if args.out:
        args.out.write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
