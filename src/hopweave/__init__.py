"""hopweave: compositional retrieval for AI agents."""

from hopweave.errors import HopweaveError

__version__ = "0.1.0"

__all__ = ["HopweaveError", "__version__"]
