"""``hopweave compact``: fold the embedded graph store's journal into its snapshot."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Optional

import typer

from hopweave.cli import app
from hopweave.cli.common import GraphOpt, emit_json, handle_errors, store_path


def _files(graph_dir: Path) -> dict[str, Any]:
    """The snapshot's format and size and the journal's size (bytes; 0 when absent)."""
    import json

    from hopweave.graph._persist import JOURNAL, SNAPSHOT

    snap, journal = graph_dir / SNAPSHOT, graph_dir / JOURNAL
    fmt = None
    if snap.is_file():
        with open(snap, "rb") as f:
            try:
                fmt = json.loads(f.readline(4096)).get("format")
            except ValueError:
                fmt = None
    return {"snapshot_format": fmt, "snapshot_bytes": snap.stat().st_size if snap.is_file() else 0,
            "journal_bytes": journal.stat().st_size if journal.is_file() else 0}


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
    from hopweave.graph._persist import FORMAT
    from hopweave.stores.front import check_store_dir

    root = store_path(store, "hopweave compact")
    check_store_dir(root)
    before = _files(root / GRAPH_SUBDIR)
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
    out = {"store": str(root), "before": before, "after": _files(root / GRAPH_SUBDIR), "compacted": True,
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
