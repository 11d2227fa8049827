"""What ``hopweave doctor``'s checks share: a finding's severity, how a check records one, and
the fix it names for an error (:mod:`hopweave.stores.doctor` runs the checks; a store kind's own
checks, rows of :mod:`hopweave.stores.kinds`, live in the kind's module)."""

from __future__ import annotations

from typing import Callable, Literal

from hopweave.errors import HopweaveError
from hopweave.stores.uri import StoreURI

Severity = Literal["ok", "warning", "error"]
#: Records one finding of the store being checked: (check, severity, detail, fix="").
AddFinding = Callable[..., None]


def load_fix(uri: StoreURI) -> str:
    """The command that loads a pack into the graph store of ``uri``."""
    return f"hopweave load PACK --graph {uri.display}"


def fix_for(exc: HopweaveError, uri: StoreURI, *, local: bool) -> str:
    """What to do about ``exc``, raised opening the graph store of ``uri`` (``local``: the URI
    names a directory a pack is loaded into)."""
    from hopweave.errors import (
        MissingDependencyError,
        StoreAuthError,
        StoreCorruptError,
        StoreNotLoadedError,
        StoreUnavailableError,
    )

    if isinstance(exc, MissingDependencyError):
        return f"pip install 'hopweave[{exc.extra}]'"
    if isinstance(exc, StoreAuthError):
        return "set HOPWEAVE_NEO4J_USER / HOPWEAVE_NEO4J_PASSWORD (or HOPWEAVE_FALKORDB_PASSWORD) to the server's"
    if isinstance(exc, StoreUnavailableError):
        return f"start the server (`docker compose up -d`) or fix the URI {uri.display}"
    if isinstance(exc, (StoreNotLoadedError, StoreCorruptError)):
        return f"restore a backup, or reload: {load_fix(uri)}"
    return f"load a pack into it: {load_fix(uri)}" if local else ""
