"""The registry of published ranking profiles (``profiles.yaml``), selected by name.

Profiles are data; this module only loads, validates and hands them out. ``get_profile(name)``
raises UnknownProfileError for an unknown name (with the list of known ones); ``default_profile()``
is the documented default hybrid profile.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from hopweave.errors import ConfigError, UnknownProfileError
from hopweave.fileio import read_yaml
from hopweave.models.ranking import RankingProfile

PROFILES_FILE = Path(__file__).with_name("profiles.yaml")


class ProfileRegistry:
    """Immutable name -> RankingProfile map with a default."""

    def __init__(self, profiles: list[RankingProfile], default: str) -> None:
        by_name: dict[str, RankingProfile] = {}
        for p in profiles:
            if p.name in by_name:
                raise ConfigError(f"ranking profile {p.name!r} is published twice")
            by_name[p.name] = p
        if default not in by_name:
            raise ConfigError(f"default ranking profile {default!r} is not published")
        self._by_name = by_name
        self.default_name = default

    @classmethod
    def load(cls, path: str | Path = PROFILES_FILE) -> "ProfileRegistry":
        """Read a profiles YAML file.

        Returns the registry of the profiles it publishes.

        Raises:
            InputError: the file does not exist or is not YAML.
            ConfigError: its content is not a valid profile list with a published default.
        """
        data: Any = read_yaml(path, "ranking profiles file")
        try:
            profiles = [RankingProfile.model_validate(p) for p in data["profiles"]]
            return cls(profiles, str(data["default"]))
        except ConfigError:
            raise
        except Exception as exc:
            raise ConfigError(f"ranking profiles file {path} is invalid: {exc}") from exc

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def get(self, name: str | None = None) -> RankingProfile:
        """The profile called ``name`` (the default when None). Raises UnknownProfileError."""
        key = self.default_name if name is None else name
        try:
            return self._by_name[key]
        except KeyError:
            raise UnknownProfileError(
                f"unknown ranking profile {key!r}; published profiles: {', '.join(self.names())}"
            ) from None

    def all(self) -> list[RankingProfile]:
        return [self._by_name[n] for n in self.names()]


@lru_cache(maxsize=1)
def registry() -> ProfileRegistry:
    """The shipped profiles (loaded once)."""
    return ProfileRegistry.load()


def get_profile(name: str | None = None) -> RankingProfile:
    """Published profile by name; None gives the default hybrid profile."""
    return registry().get(name)


def default_profile() -> RankingProfile:
    return registry().get(None)


def list_profiles() -> list[RankingProfile]:
    return registry().all()
