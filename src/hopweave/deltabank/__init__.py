"""The DeltaBank example: Maria's late-fee dispute (seed 004) in a scalable, seeded graph.

``load_deltabank(store_dir, nodes=..., seed=...)`` builds the store; ``generate(...)`` streams
the graph's (tenant, items) batches for other backends.
"""

from hopweave.deltabank.generate import DEFAULT_NODES, DEFAULT_SEED, OTHER_TENANT, generate
from hopweave.deltabank.maria import AS_OF, CUSTOMER_ID, TENANT

__all__ = ["AS_OF", "CUSTOMER_ID", "DEFAULT_NODES", "DEFAULT_SEED", "OTHER_TENANT", "TENANT", "generate",
           "load_deltabank"]


def __getattr__(name: str):  # lazy: load pulls in the store
    if name == "load_deltabank":
        from hopweave.deltabank.load import load_deltabank

        return load_deltabank
    raise AttributeError(name)
