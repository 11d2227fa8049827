"""Settings for pointing hopweave at its stores, read by pydantic-settings.

Every field is read from the environment with the ``HOPWEAVE_`` prefix (``HOPWEAVE_NEO4J_URI``,
``HOPWEAVE_QDRANT_URL``, ...) or from a dotenv file passed explicitly
(``HopweaveSettings(_env_file=".env")``) — nothing is read at import time. Defaults are the
embedded stack (networkx + Qdrant local in ``store_dir``); setting ``neo4j_uri`` /
``qdrant_url`` selects the servers of ``docker-compose.yml``. See docs/inspect.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from hopweave.errors import ConfigError

#: URI schemes of the Neo4j Bolt protocol (the only transport hopweave uses).
NEO4J_SCHEMES = ("bolt://", "bolt+s://", "bolt+ssc://", "neo4j://", "neo4j+s://", "neo4j+ssc://")


class HopweaveSettings(BaseSettings):
    """Where hopweave's stores live. Build with ``HopweaveSettings()`` (reads the environment)."""

    model_config = SettingsConfigDict(env_prefix="HOPWEAVE_", extra="ignore", frozen=True)

    #: Directory of the embedded stores (networkx graph, Qdrant local, FalkorDB data file):
    #: ``HOPWEAVE_STORE`` (as the engine CLI reads it) or ``HOPWEAVE_STORE_DIR``.
    store_dir: Path = Field(
        default=Path(".hopweave") / "store",
        validation_alias=AliasChoices("HOPWEAVE_STORE", "HOPWEAVE_STORE_DIR", "store_dir"),
    )
    #: Graph backend: "networkx" (embedded default), "neo4j" or "falkordb".
    graph_backend: Literal["networkx", "neo4j", "falkordb"] | None = None

    neo4j_uri: str | None = None
    neo4j_user: str = "neo4j"
    neo4j_password: SecretStr | None = None
    neo4j_database: str = "neo4j"

    qdrant_url: str | None = None
    qdrant_api_key: SecretStr | None = None

    #: FalkorDB data directory (embedded falkordblite); defaults to ``store_dir / "falkordb"``.
    falkordb_path: Path | None = None

    #: Extra wait, after a pattern's budget, before the client gives up on a server query
    #: (None: the engine's own default, ``Capabilities.client_grace_ms``: Neo4j 50, FalkorDB 0).
    client_grace_ms: float | None = Field(default=None, ge=0, le=10_000)

    @field_validator("neo4j_uri")
    @classmethod
    def _scheme(cls, v: str | None) -> str | None:
        if v is None or v == "":
            return None
        if not v.startswith(NEO4J_SCHEMES):
            raise ValueError(f"HOPWEAVE_NEO4J_URI must start with one of {NEO4J_SCHEMES}, got {v!r}")
        return v

    @property
    def backend(self) -> str:
        """The graph backend in effect: explicit ``graph_backend``, else neo4j when a URI is set."""
        if self.graph_backend:
            return self.graph_backend
        return "neo4j" if self.neo4j_uri else "networkx"

    def neo4j_auth(self) -> tuple[str, str]:
        """(user, password) for the Neo4j driver; raises ConfigError when no password is set."""
        if self.neo4j_password is None:
            raise ConfigError(
                "HOPWEAVE_NEO4J_PASSWORD is not set: export it (the same value as NEO4J_PASSWORD in "
                "docker-compose's environment)"
            )
        return self.neo4j_user, self.neo4j_password.get_secret_value()


def load_settings(**overrides: object) -> HopweaveSettings:
    """Settings from the environment, with explicit overrides; invalid values raise ConfigError."""
    try:
        return HopweaveSettings(**overrides)  # type: ignore[arg-type]
    except ValueError as exc:  # pydantic ValidationError is a ValueError
        raise ConfigError(f"invalid hopweave settings: {exc}") from exc
