"""Search commands: ``ingest``, ``search``, ``profiles`` and ``eval beir|ablation``."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import typer

from hopweave.cli import app
from hopweave.cli.common import GraphOpt, VectorsOpt, emit_json, handle_errors, open_cli_stores
from hopweave.errors import InputError, NotFoundError

eval_app = typer.Typer(help="Evaluate retrieval quality and latency on BEIR-format data.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")


@contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str, int, int], None] | None]:
    """A rich progress callback on a terminal; None (silent) otherwise or in JSON mode."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        transient=True,
    ) as prog:
        tasks: dict[str, Any] = {}

        def cb(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = prog.add_task(stage, total=total)
            prog.update(tasks[stage], completed=done, total=total)

        yield cb


def _schema(store: str | None) -> Any:
    """The schema of the ``--graph`` store (its settings' own), else (a store not loaded from a
    pack, or none yet) the domain-free base schema."""
    from hopweave.models.schema import GraphSchema
    from hopweave.models.store_settings import read_store_settings
    from hopweave.stores.uri import default_graph_uri, parse_graph_uri

    uri = parse_graph_uri(store if store is not None else default_graph_uri())
    if uri.kind == "embedded" and uri.path is not None:
        stored = read_store_settings(uri.path)
    else:
        with open_cli_stores(store, graph_only=True) as stores:
            stored = stores.settings
    return stored.schema() if stored is not None else GraphSchema.base()


def _vectors(store: str | None, vectors: str | None) -> Any:
    """The parsed ``--vectors`` URI (default: as :func:`hopweave.open`)."""
    from hopweave.errors import ConfigError
    from hopweave.stores.uri import default_graph_uri, default_vectors_uri, parse_graph_uri, parse_vectors_uri

    raw = vectors if vectors is not None else default_vectors_uri(
        parse_graph_uri(store if store is not None else default_graph_uri()))
    if raw is None:
        raise ConfigError("no vector index: pass --vectors URI (a store directory or http(s)://HOST:6333), or set "
                          "HOPWEAVE_VECTORS")
    return parse_vectors_uri(raw)


@app.command()
@handle_errors
def ingest(
    path: Path = typer.Argument(..., help="A .jsonl file, a markdown file with front matter, or a folder of them."),
    store: Optional[str] = GraphOpt,
    vectors: Optional[str] = VectorsOpt,
    tenant: Optional[str] = typer.Option(None, "--tenant", help="Tenant of records that carry no tenant_id."),
    on_error: str = typer.Option("reject", "--on-error", help="skip: ingest the valid records; reject: write nothing."),
    max_words: int = typer.Option(180, "--max-words", help="Chunk size cap in words."),
    no_embed: bool = typer.Option(False, "--no-embed", help="Index lexically only (vectors can be added later)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON (no progress output)."),
) -> None:
    """Chunk, embed and index documents (idempotent; new revisions supersede old ones). The index
    is updated aside and swapped in atomically: an interrupted ingest leaves the previous one."""
    from hopweave.search.ingest import load_documents, read_records
    from hopweave.search.staging import ingest_incremental

    if on_error not in ("skip", "reject"):
        raise InputError("--on-error must be skip or reject")
    schema = _schema(store)
    docs, report = load_documents(read_records(path), schema, tenant, on_error=on_error)  # type: ignore[arg-type]
    embedder = None
    if not no_embed:
        from hopweave.search.embedder import default_embedder

        embedder = default_embedder()
    target = _vectors(store, vectors)
    if target.kind == "embedded":
        with _progress(not as_json) as cb:
            ingest_incremental(target.path, schema, docs, embedder, progress=cb, report=report, max_words=max_words)
    else:  # a Qdrant server (or :memory:): upserted in place
        from hopweave.search.ingest import Ingestor
        from hopweave.stores.front import open_vectors

        index = open_vectors(target, schema)
        assert index is not None
        try:
            Ingestor(index, embedder, max_words=max_words).ingest(docs, report=report)
            index.optimize()
        finally:
            index.close()
    data = report.as_dict()
    if as_json:
        emit_json(data)
        return
    typer.echo(
        f"{data['documents']} documents: {data['new']} new, {data['updated']} updated, "
        f"{data['unchanged']} unchanged; {data['chunks_written']} chunks written "
        f"({data['chunks_embedded']} embedded, {data['vectors_reused']} vectors reused), "
        f"{data['superseded_chunks']} chunks superseded in {data['elapsed_s']:.1f}s"
    )
    for p in report.skipped:
        typer.echo(f"skipped: {p}", err=True)


@app.command()
@handle_errors
def search(
    query: str = typer.Argument(..., help="Query text."),
    store: Optional[str] = GraphOpt,
    vectors: Optional[str] = VectorsOpt,
    tenant: str = typer.Option(..., "--tenant", help="Tenant to search in."),
    profile: Optional[str] = typer.Option(None, "--profile", help="Ranking profile (default: the default hybrid)."),
    filter_json: Optional[str] = typer.Option(None, "--filter", help="FilterTree as JSON."),
    limit: int = typer.Option(10, "--limit"),
    rerank: str = typer.Option("none", "--rerank", help="none | bi_encoder | cross_encoder"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Pre-filtered hybrid search over an ingested store."""
    from hopweave.search.embedder import default_embedder
    from hopweave.search.profiles import get_profile
    from hopweave.search.rerank import get_reranker

    prof = get_profile(profile)
    where = None
    if filter_json:
        try:
            where = json.loads(filter_json)
        except ValueError as exc:
            raise InputError(f"--filter is not valid JSON: {exc}") from exc
    emb = default_embedder()
    from hopweave.stores.front import open_vectors

    target = _vectors(store, vectors)
    index = open_vectors(target, _schema(store))
    if index is None:
        raise NotFoundError(f"no vector index at {target.display}: ingest documents first (`hopweave ingest` "
                            "or `hopweave load PACK`)")
    try:
        vec = emb.embed_query(query) if prof.uses_semantic else None
        res = index.search(tenant, query, prof, where=where, limit=limit, query_vector=vec, query_space=emb.space)
        rr = get_reranker(rerank, emb, lambda ids: index.dense_vectors(tenant, ids, emb.space))
        if rr is not None:
            res = res.model_copy(update={"hits": tuple(rr.rerank(query, list(res.hits)))})
    finally:
        index.close()
    if as_json:
        emit_json(res.model_dump(mode="json"))
        return
    c = res.coverage
    typer.echo(f"profile {prof.name} v{prof.version}; eligible {c.eligible_records}, embedded {c.embedded_records} ({c.embedding_coverage})")
    if c.semantic_skipped_reason:
        typer.echo(f"semantic: {c.semantic_skipped_reason}")
    for i, h in enumerate(res.hits, start=1):
        where_s = f"{h.document or h.document_id} §{h.section}" if h.section else (h.document or h.document_id)
        typer.echo(f"{i:>2}. {h.score:.4f}  {where_s}: {h.text[:100]}")


@app.command("profiles")
@handle_errors
def profiles_cmd(as_json: bool = typer.Option(False, "--json")) -> None:
    """List the published ranking profiles."""
    from hopweave.search.profiles import list_profiles, registry

    items = [p.model_dump(mode="json") for p in list_profiles()]
    if as_json:
        emit_json({"default": registry().default_name, "profiles": items})
        return
    for p in list_profiles():
        mark = "*" if p.name == registry().default_name else " "
        typer.echo(f"{mark} {p.name} v{p.version} ({p.method}): {p.description}")


def _eval_setup(data: Path, split: str, cache: Optional[Path], as_json: bool) -> tuple[Any, Any, Any, dict[str, Any]]:
    from hopweave.search.embedder import default_embedder
    from hopweave.search.eval.beir import load_beir
    from hopweave.search.eval.runner import build_index

    ds = load_beir(data, split)
    emb = default_embedder()
    with _progress(not as_json) as cb:
        index, info = build_index(ds, emb, cache_dir=cache, progress=cb)
    return ds, emb, index, info


def _machine() -> dict[str, Any]:
    import os
    import platform

    return {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()}


@eval_app.command("beir")
@handle_errors
def eval_beir(
    data: Path = typer.Option(..., "--data", help="BEIR folder (corpus.jsonl[.gz], queries.jsonl, qrels/)."),
    split: str = typer.Option("test", "--split"),
    profile: Optional[str] = typer.Option(None, "--profile", help="Ranking profile (default hybrid if omitted)."),
    rerank: str = typer.Option("none", "--rerank", help="none | bi_encoder | cross_encoder"),
    top_n: int = typer.Option(40, "--rerank-top-n"),
    cache: Optional[Path] = typer.Option(None, "--cache", help="Cache dir (default ~/.cache/hopweave)."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """nDCG@10, Recall@10/100, MRR@10, P@10 and latency of one profile on one split."""
    from hopweave.search.eval.runner import EVAL_TENANT, evaluate
    from hopweave.search.profiles import get_profile
    from hopweave.search.rerank import get_reranker

    prof = get_profile(profile)
    ds, emb, index, info = _eval_setup(data, split, cache, as_json)
    try:
        rr = get_reranker(rerank, emb, lambda ids: index.dense_vectors(EVAL_TENANT, ids, emb.space))
        run = evaluate(index, ds, prof, emb, reranker=rr, top_n=top_n)
    finally:
        index.close()
    out = {
        "dataset": ds.name, "split": split, "queries": len(ds.queries), "profile": prof.model_dump(mode="json"),
        "reranker": run.reranker, "metrics": {k: round(v, 4) for k, v in run.metrics.items()},
        "latency_ms": run.latency_ms, "index": info, "machine": _machine(),
    }
    if as_json:
        emit_json(out)
        return
    typer.echo(f"{ds.name} {split} ({len(ds.queries)} queries), profile {prof.name}" + (f" + {run.reranker}" if run.reranker else ""))
    for k, v in out["metrics"].items():
        typer.echo(f"  {k:<11} {v:.4f}")
    typer.echo(f"  latency p50 {run.latency_ms['p50']} ms, p95 {run.latency_ms['p95']} ms")


@eval_app.command("ablation")
@handle_errors
def eval_ablation(
    data: Path = typer.Option(..., "--data"),
    split: str = typer.Option("test", "--split"),
    rerank: str = typer.Option("bi_encoder", "--rerank", help="Reranker for the rerank rows (none to skip)."),
    top_n: int = typer.Option(40, "--rerank-top-n"),
    cache: Optional[Path] = typer.Option(None, "--cache"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Every published profile on the same frozen index, with paired bootstrap CIs vs the best single channel."""
    from hopweave.search.eval.runner import EVAL_TENANT, compare, evaluate
    from hopweave.search.profiles import default_profile, list_profiles
    from hopweave.search.rerank import get_reranker

    ds, emb, index, info = _eval_setup(data, split, cache, as_json)
    runs = []
    try:
        for p in list_profiles():
            runs.append(evaluate(index, ds, p, emb))
        rr = get_reranker(rerank, emb, lambda ids: index.dense_vectors(EVAL_TENANT, ids, emb.space))
        if rr is not None:
            runs.append(evaluate(index, ds, default_profile(), emb, reranker=rr, top_n=top_n))
    finally:
        index.close()
    cmp = compare(runs)
    rows = [r.row() for r in runs]
    for r in rows:
        r["vs_baseline"] = cmp["intervals"].get(r["name"])
    out = {"dataset": ds.name, "split": split, "queries": len(ds.queries), "baseline": cmp["baseline"], "rows": rows, "index": info, "machine": _machine()}
    if as_json:
        emit_json(out)
        return
    typer.echo(f"{ds.name} {split} ({len(ds.queries)} queries); CI = paired bootstrap 95% of nDCG@10 vs {cmp['baseline']}")
    typer.echo(f"{'run':<28}{'nDCG@10':>8}{'R@10':>8}{'R@100':>8}{'MRR@10':>8}{'P@10':>8}{'p50 ms':>8}  CI")
    for r in rows:
        ci = r["vs_baseline"]
        ci_s = f"{ci['mean']:+.4f} [{ci['low']:+.4f}, {ci['high']:+.4f}]" if ci else "baseline"
        typer.echo(
            f"{r['name']:<28}{r['ndcg@10']:>8.4f}{r['recall@10']:>8.4f}{r['recall@100']:>8.4f}"
            f"{r['mrr@10']:>8.4f}{r['p@10']:>8.4f}{r['p50_ms']:>8.1f}  {ci_s}"
        )
