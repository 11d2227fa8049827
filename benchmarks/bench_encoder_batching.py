"""Can the query encoder batch concurrent requests without a vector depending on its batch?

    python benchmarks/bench_encoder_batching.py --queries 10000 --json out.json

The shipped encoder (``OnnxEmbedder(int8=True)``: the int8 dynamically quantized MiniLM on ONNX
Runtime, one intra-op thread, sequential, deterministic compute) runs every text alone and
unpadded. Batching would pad every batch to a fixed (batch, length) bucket, so a text is always
run in a tensor of the same shape. This script tests that proposal over ``--queries`` texts (the
SciFact claims, the example packs' utterances and scenario utterances, then SciFact titles and
sentences to fill the count): for every text and every bucket (batch B in ``--batches``, length
the smallest of ``--lengths`` that holds it), its vector

- ``alone``: in a (B, L) tensor whose other B - 1 rows are padding (attention mask 0);
- ``mixed``: in a (B, L) tensor with B - 1 other texts of the same bucket (drawn at random,
  seeded; ``--draws`` independent draws per text);
- ``shipped``: what the engine returns today (``OnnxMiniLM.encode([text])``, unpadded).

It counts texts whose ``mixed`` vectors are byte-identical to ``alone`` (the batch-independence
the proposal needs) and whose ``alone`` vector equals ``shipped`` (batching would change no
output byte), and the largest element difference. The same on the fp32 graph (``--fp32``) tells
whether the quantization or the padding is what moves the bits. It also times one (B, L) run
against B single runs (the CPU batching could save).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SCIFACT = Path("/work/shared/data/scifact")


def _strings(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


def texts(n: int, scifact: Path = SCIFACT) -> list[str]:
    """Up to ``n`` distinct query texts: SciFact claims, the packs' utterances (utterance splits,
    scenario utterances), then SciFact titles and corpus sentences."""
    import yaml

    out: dict[str, None] = {}
    qpath = scifact / "queries.jsonl"
    if qpath.is_file():
        for line in qpath.read_text(encoding="utf-8").splitlines():
            out[json.loads(line)["text"].strip()] = None
    for pack in ("deltabank", "telecom"):
        for f in sorted((ROOT / "examples" / pack / "utterances").glob("*.yaml")):
            for s in _strings(yaml.safe_load(f.read_text(encoding="utf-8"))):
                out[s.strip()] = None
        for f in sorted((ROOT / "examples" / pack / "scenarios").glob("*.yaml")):
            doc = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
            for key in ("utterance",):
                if isinstance(doc.get(key), str):
                    out[doc[key].strip()] = None
    cpath = scifact / "corpus.jsonl.gz"
    if len(out) < n and cpath.is_file():
        with gzip.open(cpath, "rt", encoding="utf-8") as fh:
            docs = [json.loads(line) for line in fh]
        for d in docs:
            out[d["title"].strip()] = None
        for d in docs:
            if len(out) >= n:
                break
            for sent in d["text"].split(". "):
                if 20 <= len(sent) <= 300:
                    out[sent.strip()] = None
    return [t for t in out if t][:n]


class Bucketed:
    """Runs the shipped session on texts padded to fixed (batch, length) buckets."""

    def __init__(self, enc: Any) -> None:
        self.enc = enc

    def tokens(self, text: str) -> tuple[list[int], list[int]]:
        e = self.enc._tok.encode(text)
        return list(e.ids), list(e.type_ids)

    def run(self, rows: list[tuple[list[int], list[int]]], batch: int, length: int) -> np.ndarray:
        """Vectors of ``rows`` in one (batch, length) tensor (padding rows after them)."""
        ids = np.zeros((batch, length), dtype=np.int64)
        types = np.zeros((batch, length), dtype=np.int64)
        mask = np.zeros((batch, length), dtype=np.int64)
        for i, (tid, tty) in enumerate(rows):
            ids[i, :len(tid)] = tid
            types[i, :len(tty)] = tty
            mask[i, :len(tid)] = 1
        hidden = self.enc._sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})[0]
        out = np.empty((len(rows), hidden.shape[2]), dtype=np.float32)
        for i, (tid, _) in enumerate(rows):
            v = hidden[i, :len(tid)].sum(axis=0, dtype=np.float32) / np.float32(len(tid))
            out[i] = v / max(np.sqrt((v * v).sum(dtype=np.float32)), np.float32(1e-12))
        return out


def check(enc: Any, corpus: list[str], batches: list[int], lengths: list[int], seed: int,
          draws: int = 2) -> dict[str, Any]:
    b = Bucketed(enc)
    toks = [b.tokens(t) for t in corpus]
    bucket_of = [next((L for L in lengths if len(tid) <= L), None) for tid, _ in toks]
    by_bucket: dict[int, list[int]] = {}
    for i, L in enumerate(bucket_of):
        if L is not None:
            by_bucket.setdefault(L, []).append(i)
    rng = random.Random(seed)
    res: dict[str, Any] = {"texts": len(corpus), "bucket_counts": {str(k): len(v) for k, v in sorted(by_bucket.items())},
                           "over_longest_bucket": sum(1 for x in bucket_of if x is None)}
    shipped = [enc.encode([t])[0] for t in corpus]
    for B in batches:
        same_mixed = same_shipped = checked = 0
        max_mixed = max_shipped = 0.0
        for L, members in sorted(by_bucket.items()):
            for i in members:
                alone = b.run([toks[i]], B, L)[0]
                checked += 1
                if alone.tobytes() == shipped[i].tobytes():
                    same_shipped += 1
                max_shipped = max(max_shipped, float(np.abs(alone - shipped[i]).max()))
                if B == 1:
                    continue
                ok = True
                for _ in range(draws):
                    mates = rng.sample([j for j in members if j != i], min(B - 1, len(members) - 1)) \
                        if len(members) > 1 else []
                    pos = rng.randrange(len(mates) + 1)
                    rows = [toks[j] for j in mates]
                    rows.insert(pos, toks[i])
                    mixed = b.run(rows, B, L)[pos]
                    if mixed.tobytes() != alone.tobytes():
                        ok = False
                    max_mixed = max(max_mixed, float(np.abs(mixed - alone).max()))
                same_mixed += ok
        res[f"B{B}"] = {"checked": checked,
                        "mixed_identical_to_alone": same_mixed if B > 1 else None,
                        "max_abs_diff_mixed_vs_alone": max_mixed if B > 1 else None,
                        "alone_identical_to_shipped": same_shipped,
                        "max_abs_diff_alone_vs_shipped": max_shipped}
    return res


def timing(enc: Any, corpus: list[str], B: int, L: int, reps: int) -> dict[str, Any]:
    """One (B, L) padded run vs B unpadded single runs (ms, medians of ``reps``)."""
    b = Bucketed(enc)
    pool = [t for t in corpus if len(b.tokens(t)[0]) <= L][: B * reps]
    one, batched = [], []
    for r in range(reps):
        grp = pool[r * B:(r + 1) * B]
        if len(grp) < B:
            break
        t = time.perf_counter()
        for x in grp:
            enc.encode([x])
        one.append((time.perf_counter() - t) * 1000)
        rows = [b.tokens(x) for x in grp]
        t = time.perf_counter()
        b.run(rows, B, L)
        batched.append((time.perf_counter() - t) * 1000)
    return {"batch": B, "length": L, "singles_ms_p50": round(statistics.median(one), 2),
            "padded_batch_ms_p50": round(statistics.median(batched), 2), "reps": len(one)}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--batches", default="1,4,8", help="batch sizes B (comma separated)")
    ap.add_argument("--lengths", default="32,64,128,256", help="length buckets L (comma separated)")
    ap.add_argument("--seed", type=int, default=31)
    ap.add_argument("--draws", type=int, default=2, help="random batches per text and batch size")
    ap.add_argument("--fp32", action="store_true", help="also run the check on the fp32 graph")
    ap.add_argument("--timing-reps", type=int, default=30)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from hopweave.search.embedder import OnnxEmbedder

    corpus = texts(args.queries)
    batches = [int(x) for x in args.batches.split(",")]
    lengths = sorted(int(x) for x in args.lengths.split(","))
    res: dict[str, Any] = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "machine": machine(),
                           "command": "python benchmarks/bench_encoder_batching.py " + " ".join(argv or sys.argv[1:])}
    graphs = [("int8", True)] + ([("fp32", False)] if args.fp32 else [])
    for name, int8 in graphs:
        enc = OnnxEmbedder(int8=int8, query_cache_size=0).encoder
        t = time.perf_counter()
        res[name] = check(enc, corpus, batches, lengths, args.seed, args.draws)
        res[name]["seconds"] = round(time.perf_counter() - t, 1)
        res[name]["timing"] = [timing(enc, corpus, B, 32, args.timing_reps) for B in batches if B > 1]
        print(json.dumps({name: res[name]}, indent=1), file=sys.stderr)
    res["machine"]["load_avg_end"] = round(__import__("os").getloadavg()[0], 2)
    out = json.dumps(res, indent=1)
    if args.json:
        Path(args.json).write_text(out + "\n", encoding="utf-8")
    print(out)
    return res


if __name__ == "__main__":
    main()
