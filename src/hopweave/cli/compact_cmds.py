"""``hopweave compact``: fold the embedded graph store's journal into its snapshot."""

from __future__ import annotations

import time
from typing import Optional

import typer

from hopweave.cli import app
from hopweave.cli.common import GraphOpt, emit_json, handle_errors, store_path


@app.command("compact")
@handle_errors
def compact_cmd(
    store: Optional[str] = GraphOpt,
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Fold the embedded graph store's journal (decision traces, incremental loads) into its
    snapshot and empty the journal, atomically; the snapshot is written in the current format
    (an older format-2 snapshot is converted). Every open replays the journal, so a long one
    slows start-up (docs/BENCHMARKS.md, cold start). Takes the store's write lock (a writer
    waits); processes serving the store keep answering and read the new snapshot at their next
    catch-up (seconds at a million nodes)."""
    from hopweave.graph import GRAPH_SUBDIR, open_graph_store
    from hopweave.graph._persist import FORMAT, files_summary
    from hopweave.stores.front import check_store_dir

    root = store_path(store, "hopweave compact")
    check_store_dir(root)
    before = files_summary(root / GRAPH_SUBDIR)
    if before["journal_bytes"] == 0 and before["snapshot_format"] == FORMAT:
        if as_json:
            emit_json({"store": str(root), "before": before, "after": before, "compacted": False})
        else:
            typer.echo(f"{root}: nothing to compact (empty journal, snapshot format {FORMAT})")
        return
    t = time.perf_counter()
    g = open_graph_store(root)
    try:
        opened_s = time.perf_counter() - t
        g.compact()
        stats = g.stats()
    finally:
        g.close()
    out = {"store": str(root), "before": before, "after": files_summary(root / GRAPH_SUBDIR), "compacted": True,
           "nodes": stats["nodes"], "edges": stats["edges"], "open_s": round(opened_s, 2),
           "total_s": round(time.perf_counter() - t, 2)}
    if as_json:
        emit_json(out)
        return
    b, a = out["before"], out["after"]
    typer.echo(f"compacted {root}: {out['nodes']:,} nodes, {out['edges']:,} edges in {out['total_s']} s")
    typer.echo(f"  snapshot format {b['snapshot_format']} -> {a['snapshot_format']}, "
               f"{b['snapshot_bytes']:,} -> {a['snapshot_bytes']:,} bytes; "
               f"journal {b['journal_bytes']:,} -> {a['journal_bytes']:,} bytes")
