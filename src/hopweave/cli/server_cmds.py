"""Server commands: ``load-server``, ``cypher-schema`` and ``inspect trace --html``.

``hopweave load-server PACK --neo4j bolt://localhost:7687 --qdrant http://localhost:6333``
loads the same example as ``hopweave load`` into the docker-compose servers (or ``--falkordb DIR``
into an embedded FalkorDB). ``hopweave inspect trace TRACE_ID --html out.html`` writes a
self-contained picture of a decision trace's subgraph. See docs/inspect.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from hopweave.cli import app
from hopweave.cli.common import STORE_HELP, emit_json, handle_errors, store_path
from hopweave.errors import InputError

inspect_app = typer.Typer(help="Look at the graph: decision traces as pictures.", no_args_is_help=True)
app.add_typer(inspect_app, name="inspect")

Neo4jOpt = typer.Option(None, "--neo4j", help="Neo4j Bolt URI (credentials: HOPWEAVE_NEO4J_USER/PASSWORD).")
FalkorOpt = typer.Option(None, "--falkordb", help="Embedded FalkorDB data directory (Python >= 3.12).")


def _engine_store(store: Optional[Path]) -> Path:
    """The engine's store directory (where retrievals record their traces)."""
    return store_path(store)


@app.command("cypher-schema")
@handle_errors
def cypher_schema_cmd() -> None:
    """Print the constraints and indexes for Neo4j (the content of cypher/schema.cypher)."""
    from hopweave.graph.cypher_schema import render_schema_cypher
    from hopweave.models.schema import GraphSchema
    from hopweave.paths import default_schema_path

    typer.echo(render_schema_cypher(GraphSchema.load(default_schema_path())), nl=False)


@app.command("load-server")
@handle_errors
def load_server_cmd(
    pack: Path = typer.Argument(..., help="Domain pack folder (with a hopweave.yaml)."),
    neo4j: Optional[str] = Neo4jOpt,
    falkordb: Optional[Path] = FalkorOpt,
    qdrant: Optional[str] = typer.Option(
        None, "--qdrant", help="Qdrant server URL: also ingest the policy corpus."
    ),
    qdrant_api_key: Optional[str] = typer.Option(None, "--qdrant-api-key", envvar="HOPWEAVE_QDRANT_API_KEY"),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Load a domain pack into a server graph store (replacing its graph), and with --qdrant its
    policy corpus into a Qdrant server."""
    import time

    from hopweave.graph.server_load import open_server_store
    from hopweave.pack.batches import pack_batches
    from hopweave.pack.loader import read_pack

    t0 = time.perf_counter()
    schema = read_pack(pack).schema
    store = open_server_store(neo4j=neo4j, falkordb=falkordb, schema=schema)
    try:
        n_nodes, n_edges = store.bulk_load(pack_batches(pack), replace=True)
        summary = {
            "backend": store.caps.name,
            "nodes": n_nodes,
            "edges": n_edges,
            "patterns": len(store.patterns()),
            "metagraph_revision": store.metagraph_revision(),
        }
    finally:
        store.close()
    if qdrant:
        summary["vectors"] = _ingest_qdrant(pack, qdrant, qdrant_api_key)
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    if as_json:
        emit_json(summary)
        return
    typer.echo(
        f"loaded {n_nodes:,} nodes, {n_edges:,} edges, {summary['patterns']} patterns into "
        f"{summary['backend']} in {summary['seconds']} s"
    )


def _ingest_qdrant(pack: Path, url: str, api_key: Optional[str]) -> dict[str, int]:
    from hopweave.pack.corpus import ingest_corpus, load_corpus
    from hopweave.pack.loader import read_pack
    from hopweave.pack.manifest import pack_path
    from hopweave.search.client_index import ClientIndex
    from hopweave.search.embedder import default_embedder

    p = read_pack(pack)
    if p.manifest.corpus is None:
        raise InputError(f"pack {pack} has no corpus to ingest (no `corpus:` in its hopweave.yaml)")
    docs = load_corpus(pack_path(p.directory, p.manifest.corpus.dir, "corpus"), p.schema,
                       p.manifest.tenant_for_corpus())
    index = ClientIndex(p.schema, url=url, api_key=api_key)
    try:
        rep = ingest_corpus(index, default_embedder(), docs)
    finally:
        index.close()
    return {"documents": rep.documents, "chunks": rep.chunks_written}


@inspect_app.command("trace")
@handle_errors
def inspect_trace(
    trace_id: str = typer.Argument(
        ..., help="A DecisionTrace id (a recorded retrieval RT_... or a precedent)."
    ),
    html_out: Path = typer.Option(..., "--html", help="Write the picture to this HTML file."),
    tenant: Optional[str] = typer.Option(None, "--tenant", help="Tenant id (or $HOPWEAVE_TENANT)."),
    store: Optional[Path] = typer.Option(
        None, "--store", help=STORE_HELP
    ),
    neo4j: Optional[str] = Neo4jOpt,
    falkordb: Optional[Path] = FalkorOpt,
) -> None:
    """Write a self-contained HTML picture of a trace's subgraph (trace, patterns, facts, chunks,
    customer) that opens offline in any browser."""
    from hopweave.cli.trace_html import collect, render

    t = tenant or os.environ.get("HOPWEAVE_TENANT")
    if not t:
        raise InputError("traces are tenant-scoped: pass --tenant (or set HOPWEAVE_TENANT)")
    if neo4j or falkordb:
        from hopweave.graph.server_load import open_server_store

        graph_store = open_server_store(neo4j=neo4j, falkordb=falkordb)
    else:
        from hopweave.graph import GRAPH_SUBDIR, open_graph_store

        root = _engine_store(store)
        if not (root / GRAPH_SUBDIR).exists():
            raise InputError(f"no hopweave store at {root}: pass --store (or run `hopweave demo`)")
        graph_store = open_graph_store(root, read_only=True)
    try:
        graph = collect(graph_store, t, trace_id)
    finally:
        graph_store.close()
    html_out.parent.mkdir(parents=True, exist_ok=True)
    html_out.write_text(render(graph), encoding="utf-8")
    typer.echo(f"wrote {html_out} ({1 + len(graph.nodes)} nodes, {len(graph.edges)} edges)")
