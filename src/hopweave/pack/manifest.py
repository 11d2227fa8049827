"""The pack manifest, ``hopweave.yaml``: which files make up a domain pack (docs/packs.md).

:func:`read_manifest` parses and checks it; every path it names is resolved against the pack
folder and must stay inside it. A folder without a manifest is not a pack:
:class:`~hopweave.errors.PackError`, never a silent fallback.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hopweave.errors import PackError
from hopweave.models.common import _TENANT_RE
from hopweave.models.domain import DomainSettings
from hopweave.models.schema import check_identifier

MANIFEST = "hopweave.yaml"
PACK_FORMAT: Final = 1
#: The tenant name a graph entry uses for the domain's shared vocabulary.
SHARED = "_shared"


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CorpusLink(_Strict):
    """A front-matter field that links a :Document node to a vocabulary node."""

    field: str
    relationship: str
    label: str
    match: str = "name"

    @field_validator("field", "relationship", "label", "match")
    @classmethod
    def _safe(cls, v: str) -> str:
        return check_identifier(v, "name")


class CorpusSpec(_Strict):
    dir: str = "corpus"
    tenant: str | None = None
    links: tuple[CorpusLink, ...] = ()


class GraphEntry(_Strict):
    """One tenant's graph files (globs, relative to the pack), loaded in manifest order."""

    tenant: str
    files: tuple[str, ...]

    @field_validator("tenant")
    @classmethod
    def _tenant(cls, v: str) -> str:
        if v != SHARED and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", v):
            raise ValueError(f"graph tenant {v!r}: use a tenant id of the manifest's `tenants`, or {SHARED}")
        return v


class PackManifest(_Strict):
    """``hopweave.yaml``."""

    format: Literal[1] = PACK_FORMAT
    name: str
    description: str = ""
    tenants: tuple[str, ...] = Field(min_length=1)
    default_tenant: str | None = None
    schema_: str = Field(default="schema.yaml", alias="schema")
    goals: str = "goals"
    filters: str | None = "filters.yaml"
    classifier: str | None = "classifier.yaml"
    corpus: CorpusSpec | None = None
    graph: tuple[GraphEntry, ...] = ()
    sessions: str | None = "sessions"
    scenarios: str | None = "scenarios"
    utterances: str | None = "utterances"
    domain: dict[str, Any]

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    @field_validator("tenants")
    @classmethod
    def _tenants(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        for t in v:
            if not isinstance(t, str) or not _TENANT_RE.match(t):
                raise ValueError(f"tenant {t!r}: a tenant id is letters, digits, '_', '.' or '-', starting with a "
                                 "letter or digit, at most 64 characters (the store's tenant rule)")
        if len(set(v)) != len(v):
            raise ValueError(f"tenants {list(v)} name a tenant twice")
        return v

    def domain_settings(self) -> DomainSettings:
        """The ``domain:`` section as settings (its ``name`` is the pack's)."""
        return DomainSettings.model_validate({**self.domain, "name": self.name})

    def tenant_for_corpus(self) -> str:
        if self.corpus is not None and self.corpus.tenant:
            return self.corpus.tenant
        return self.default_tenant or self.tenants[0]


def _first_error(exc: ValidationError) -> list[str]:
    out = []
    for e in exc.errors():
        where = ".".join(str(x) for x in e.get("loc", ())) or "(top level)"
        out.append(f"{where}: {e.get('msg')}")
    return out


def read_manifest(pack_dir: str | Path) -> PackManifest:
    """Parse ``<pack_dir>/hopweave.yaml``. Raises PackError listing every problem of the file."""
    from hopweave.pack.files import PackFiles

    d = Path(pack_dir)
    path = d / MANIFEST
    if not d.is_dir():
        raise PackError(f"{d} is not a directory: pass a pack folder (one with a {MANIFEST})")
    if not path.is_file():
        raise PackError(
            f"{d} is not a hopweave domain pack: it has no {MANIFEST}. Create one with "
            f"`hopweave init {d}` or see docs/packs.md for the format"
        )
    raw = PackFiles(d).read_yaml(MANIFEST, "manifest", "pack manifest")  # relative to the pack root
    if not isinstance(raw, dict):
        raise PackError(f"{path}: the manifest must be a mapping (name, tenants, schema, goals, domain, ...)")
    try:
        m = PackManifest.model_validate(raw)
    except ValidationError as exc:
        raise PackError(f"{path}: " + "; ".join(_first_error(exc))) from None
    problems = manifest_problems(m)
    if problems:
        raise PackError(f"{path}: " + "; ".join(problems))
    return m


def manifest_problems(m: PackManifest) -> list[str]:
    """Cross-field problems of a parsed manifest (tenants, domain settings)."""
    out: list[str] = []
    if not re.fullmatch(r"[a-z][a-z0-9_-]{0,39}", m.name):
        out.append(f"name {m.name!r}: use lower-case letters, digits, '_' or '-', starting with a letter")
    if m.default_tenant is not None and m.default_tenant not in m.tenants:
        out.append(f"default_tenant {m.default_tenant!r} is not one of tenants {list(m.tenants)}")
    for g in m.graph:
        if g.tenant != SHARED and g.tenant not in m.tenants:
            out.append(f"graph entry for tenant {g.tenant!r}: add it to `tenants` or use {SHARED}")
    if m.corpus is not None and m.corpus.tenant and m.corpus.tenant not in m.tenants:
        out.append(f"corpus.tenant {m.corpus.tenant!r} is not one of tenants {list(m.tenants)}")
    try:
        m.domain_settings()
    except ValidationError as exc:
        out += [f"domain.{e}" for e in _first_error(exc)]
    return out


def pack_path(pack_dir: str | Path, rel: str, what: str) -> Path:
    """``rel`` resolved inside the pack (symlinks followed); raises PackError (a
    :class:`~hopweave.pack.files.PackFileError`) if it escapes the pack folder."""
    from hopweave.pack.files import PackFiles

    return PackFiles(pack_dir).path(rel, what)


def expand_globs(pack_dir: str | Path, patterns: tuple[str, ...], what: str) -> list[Path]:
    """Files matching the globs, in manifest order then sorted by name; PackError if one matches
    nothing, leaves the pack or matches a file whose real path is outside the pack."""
    from hopweave.pack.files import PackFiles

    files = PackFiles(pack_dir)
    base = files.root
    out: list[Path] = []
    for pat in patterns:
        files.path(pat.split("*")[0] or ".", what)
        hits = sorted(p for p in base.glob(pat) if p.is_file())
        if not hits:
            raise PackError(f"{what}: {pat!r} matches no file in {base}")
        for h in hits:
            files.inside(h, what)
            if h not in out:
                out.append(h)
    return out
