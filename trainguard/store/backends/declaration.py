"""What a store backend declares about itself: its URI scheme, its settings and its credentials.

Each backend module holds one `Backend` as `BACKEND`, next to its store class; `backends.declared()`
collects them. Everything outside the backend reads its needs from there: the DebugJob's
`spec.capture` fields and the CRD (`trainguard.api.debugjob`), the env the operator renders into pods
(`operator/build.py`), the sidecar config, the hook's settings (`capture/config.py`) and the reference
docs. Plain data, no I/O: importing a declaration never imports the backend's client library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    """One plain setting of a backend (not a secret): an endpoint, a region."""

    name: str
    """Its name in `spec.capture` (camelCase there) and in the sidecar config's `store`; unique among backends."""
    env: str
    """The environment variable the backend reads it from in a pod or a training process."""
    option: str
    """The keyword argument of the backend's store class that takes it."""
    description: str
    """What it is, for `kubectl explain`, the CRD and the reference docs."""
    aliases: tuple[str, ...] = ()
    """Older names still read for it: a sidecar config key, a hook keyword and its `TRAINGUARD_<ALIAS>` variable."""


@dataclass(frozen=True)
class Credential:
    """One secret value of a backend: taken from a key of the DebugJob's Secret, never copied into a spec."""

    name: str
    """`spec.capture.secretRef.<name>Key` names the Secret's key that holds it."""
    env: str
    """The variable it reaches the pods as (by `secretKeyRef`); also the default key in the Secret."""
    option: str
    """The keyword argument of the backend's store class that takes it (the operator's own reads)."""
    description: str


@dataclass(frozen=True)
class Backend:
    """A storage backend: where its class is, which URIs it serves and what it needs to reach them."""

    scheme: str
    """URI scheme without `://`: `s3`, `file`."""
    store_class: str
    """Dotted path of the class that implements the `Store` protocol; imported on first use."""
    uri_pattern: str
    """Regular expression of a run root URI the DebugJob accepts (anchored by the caller)."""
    uri_example: str
    """A URI to show in help and docs: `s3://bucket/prefix`."""
    install_hint: str = ""
    """What to install when the class's module needs a missing package."""
    settings: tuple[Setting, ...] = ()
    credentials: tuple[Credential, ...] = ()
    credentials_description: str = ""
    """What `spec.capture.secretRef` holds for this backend, and what is used without it."""

    def env(self, values: Mapping[str, str | None]) -> dict[str, str]:
        """Return the variables that carry the settings in `values` (by setting name; empty ones left out)."""
        return {s.env: str(values[s.name]) for s in self.settings if values.get(s.name)}

    def options(self, values: Mapping[str, str | None]) -> dict[str, str]:
        """Return the store class's keyword arguments for the settings in `values` (empty ones left out)."""
        return {s.option: str(values[s.name]) for s in self.settings if values.get(s.name)}

    def read_env(self, environ: Mapping[str, str], *, prefix: str = "") -> dict[str, str]:
        """Return the settings set in `environ`: `<prefix><ALIAS>` first (the hook's own names), then the backend's variable."""
        out: dict[str, str] = {}
        for s in self.settings:
            names = [prefix + a.upper() for a in s.aliases] if prefix else []
            value = next((environ[n] for n in [*names, s.env] if environ.get(n)), None)
            if value is not None:
                out[s.name] = value
        return out

    def fold_aliases(self, doc: Mapping[str, object], *, into: str) -> dict[str, object]:
        """Return `doc` with each setting given by an older name (an alias) moved to `doc[into][name]`."""
        out = dict(doc)
        for s in self.settings:
            for alias in s.aliases:
                if alias in out:
                    value = out.pop(alias)
                    given = out.get(into)
                    store = dict(given) if isinstance(given, Mapping) else {}
                    if value is not None:
                        store[s.name] = value  # given by name, it wins over what `into` holds
                    out[into] = store
        return out
