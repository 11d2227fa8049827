"""The DeltaBank pack's generator: Maria's late-fee dispute (seed 004) in a scalable, seeded graph.

Not part of the ``hopweave`` package: the pack's graph files (``examples/deltabank/graph``) are
its output (``python examples/deltabank/generator/generate.py``). Tests and benchmarks import it
with ``examples/deltabank`` on ``sys.path`` (``from generator.build import load_deltabank``).
"""

from .generate import DEFAULT_NODES, DEFAULT_SEED, OTHER_TENANT, generate
from .maria import AS_OF, CUSTOMER_ID, TENANT

__all__ = ["AS_OF", "CUSTOMER_ID", "DEFAULT_NODES", "DEFAULT_SEED", "OTHER_TENANT", "TENANT", "generate"]
