"""Open hopweave's stores by URI: ``hopweave.open(graph=..., vectors=...)`` -> :class:`Stores`.

:mod:`hopweave.stores.uri` parses the URIs (no I/O); :mod:`hopweave.stores.front` opens them;
:mod:`hopweave.stores.doctor` checks them (``hopweave doctor``).
"""

from __future__ import annotations

from hopweave.stores.front import Stores, check_store_dir, open_stores
from hopweave.stores.uri import StoreURI, parse_graph_uri, parse_vectors_uri

__all__ = ["StoreURI", "Stores", "check_store_dir", "open_stores", "parse_graph_uri", "parse_vectors_uri"]
