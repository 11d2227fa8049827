"""Helpers for the graph tests (imported by name: unique module name, not conftest)."""

from __future__ import annotations

from datetime import datetime

from domains import deltabank_schema

from hopweave.graph.base import Edge, Node
from hopweave.graph.networkx_store import NetworkxGraphStore
from hopweave.models.common import Bindings, Session
from hopweave.models.metagraph import EdgeStep, Seed, TraversalPattern
from hopweave.models.schema import GraphSchema

AS_OF = datetime(2026, 5, 12, 23, 59, 59)


def load_schema() -> GraphSchema:
    return deltabank_schema()


def bindings(tenant: str = "t1", customer: str | None = "C1", **kw) -> Bindings:
    return Bindings(session=Session(tenant_id=tenant, customer_id=customer), as_of=kw.pop("as_of", AS_OF), **kw)


def pattern(**kw) -> TraversalPattern:
    """A valid 1-hop Customer-HAS_TIER->Tier pattern, overridable."""
    base = dict(
        name="p", goal="G", sub_question="What is her tier?", seed=Seed(type="Customer"),
        edge_sequence=(EdgeStep(type="HAS_TIER"),), target_type="Tier", depth=1, version=1,
        author="test", created_at=datetime(2026, 1, 1),
    )
    base.update(kw)
    if "edge_sequence" in kw and "depth" not in kw:
        base["depth"] = len(base["edge_sequence"])
    return TraversalPattern(**base)


def small_graph(store: NetworkxGraphStore) -> None:
    """Two tenants sharing Tier nodes: t1 has C1 (Platinum, account A1 with events), t2 has C2."""
    store.write("_global", [Node("TIER_Platinum", "Tier", {"name": "Platinum", "summary": "Platinum tier"}),
                            Node("TIER_Gold", "Tier", {"name": "Gold"})])
    store.write("t1", [
        Node("C1", "Customer", {"name": "Ann", "tier": "Platinum", "summary": "C1 Platinum"}),
        Node("A1", "Account", {"type": "credit", "balance": 10.0}),
        Node("E1", "Event", {"type": "Transaction", "timestamp": "2026-05-01T10:00:00", "year": 2026, "amount": 5.0}),
        Node("E2", "Event", {"type": "Transaction", "timestamp": "2023-01-01T10:00:00", "year": 2023, "amount": 7.0}),
        Node("E3", "Event", {"type": "WaiverEvent", "timestamp": "2026-02-01T10:00:00", "year": 2026}),
    ], [Edge("C1", "TIER_Platinum", "HAS_TIER"), Edge("C1", "A1", "HOLDS"),
        Edge("A1", "E1", "HAS_EVENT"), Edge("A1", "E2", "HAS_EVENT"), Edge("A1", "E3", "HAS_EVENT")])
    store.write("t2", [Node("C2", "Customer", {"name": "Bob", "tier": "Platinum"})],
                [Edge("C2", "TIER_Platinum", "HAS_TIER")])
