"""Load a BEIR-format folder: ``corpus.jsonl(.gz)``, ``queries.jsonl``, ``qrels/<split>.tsv``.

Graded relevance is kept as given (an integer score per (query, doc)); a score of 0 or less means
"judged not relevant". Queries without any judgement in the split are dropped from that split.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from hopweave.errors import InputError


@dataclass(frozen=True)
class BeirDoc:
    """One corpus document."""

    doc_id: str
    title: str
    text: str
    metadata: dict = field(default_factory=dict)


@dataclass(frozen=True)
class BeirDataset:
    """Corpus, the queries of one split and their graded judgements."""

    name: str
    split: str
    corpus: list[BeirDoc]
    queries: dict[str, str]  # query id -> text, only queries judged in this split, sorted by id
    qrels: dict[str, dict[str, int]]  # query id -> {doc id: grade}

    def corpus_hash(self) -> str:
        """sha256 over every document id, title and text (order-independent)."""
        return corpus_hash(self.corpus)


def corpus_hash(docs: list[BeirDoc]) -> str:
    """sha256 hex digest of the corpus content, independent of file order."""
    h = hashlib.sha256()
    for d in sorted(docs, key=lambda d: d.doc_id):
        h.update(d.doc_id.encode())
        h.update(b"\0")
        h.update(d.title.encode())
        h.update(b"\0")
        h.update(d.text.encode())
        h.update(b"\n")
    return h.hexdigest()


def _open_text(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def _jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    with _open_text(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise InputError(f"{path}:{lineno}: expected a JSON object")
            yield lineno, obj


def _find(folder: Path, stem: str) -> Path:
    for name in (f"{stem}.jsonl", f"{stem}.jsonl.gz"):
        if (folder / name).is_file():
            return folder / name
    raise InputError(f"{folder} has no {stem}.jsonl or {stem}.jsonl.gz (is it a BEIR folder?)")


def load_corpus(folder: Path) -> list[BeirDoc]:
    """Read ``corpus.jsonl`` / ``corpus.jsonl.gz``; returns documents sorted by id.

    Raises:
        InputError: missing file, bad JSON, a record without ``_id`` or a duplicate id.
    """
    path = _find(folder, "corpus")
    docs: dict[str, BeirDoc] = {}
    for lineno, obj in _jsonl(path):
        doc_id = obj.get("_id")
        if doc_id is None or str(doc_id) == "":
            raise InputError(f"{path}:{lineno}: record has no _id")
        doc_id = str(doc_id)
        if doc_id in docs:
            raise InputError(f"{path}:{lineno}: duplicate _id {doc_id!r}")
        meta = obj.get("metadata") or {}
        docs[doc_id] = BeirDoc(
            doc_id=doc_id,
            title=str(obj.get("title") or ""),
            text=str(obj.get("text") or ""),
            metadata=meta if isinstance(meta, dict) else {},
        )
    return [docs[k] for k in sorted(docs)]


def load_queries(folder: Path) -> dict[str, str]:
    """Read ``queries.jsonl``; returns query id -> text.

    Raises:
        InputError: missing file or bad record.
    """
    path = _find(folder, "queries")
    out: dict[str, str] = {}
    for lineno, obj in _jsonl(path):
        qid = obj.get("_id")
        if qid is None:
            raise InputError(f"{path}:{lineno}: query has no _id")
        out[str(qid)] = str(obj.get("text") or "")
    return out


def load_qrels(folder: Path, split: str) -> dict[str, dict[str, int]]:
    """Read ``qrels/<split>.tsv`` (query-id, corpus-id, score; header optional).

    Raises:
        InputError: the file is missing or a row is malformed.
    """
    path = folder / "qrels" / f"{split}.tsv"
    if not path.is_file():
        raise InputError(f"no judgements for split {split!r}: {path} does not exist")
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8", newline="") as fh:
        for lineno, row in enumerate(csv.reader(fh, delimiter="\t"), start=1):
            if not row or (lineno == 1 and row[0].strip().lower() in {"query-id", "query_id", "qid"}):
                continue
            if len(row) < 3:
                raise InputError(f"{path}:{lineno}: expected query-id<TAB>corpus-id<TAB>score")
            try:
                grade = int(float(row[2]))
            except ValueError:
                raise InputError(f"{path}:{lineno}: score {row[2]!r} is not a number") from None
            qrels.setdefault(row[0].strip(), {})[row[1].strip()] = grade
    return qrels


def load_beir(folder: str | Path, split: str = "test") -> BeirDataset:
    """Load a BEIR folder for one split.

    Returns:
        BeirDataset whose ``queries`` hold only queries with at least one positive judgement.

    Raises:
        InputError: the folder is not a readable BEIR dataset.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"BEIR data folder {folder} does not exist")
    corpus = load_corpus(folder)
    all_queries = load_queries(folder)
    qrels = load_qrels(folder, split)
    queries: dict[str, str] = {}
    kept_qrels: dict[str, dict[str, int]] = {}
    for qid in sorted(qrels, key=_natural_key):
        if qid not in all_queries:
            raise InputError(f"qrels/{split}.tsv judges query {qid!r} that is not in queries.jsonl")
        if any(g > 0 for g in qrels[qid].values()):
            queries[qid] = all_queries[qid]
            kept_qrels[qid] = qrels[qid]
    return BeirDataset(folder.name, split, corpus, queries, kept_qrels)


def _natural_key(s: str) -> tuple[int, int | str]:
    return (0, int(s)) if s.isdigit() else (1, s)
