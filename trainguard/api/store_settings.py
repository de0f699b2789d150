"""The store part of `spec.capture`, built from what each storage backend declares.

The URI pattern, one field per backend setting (`endpoint`, `region` for s3://) and the Secret
reference with one key field per credential come from `trainguard.store.backends.declared()`, so a
new backend adds its fields to the DebugJob (and the CRD, and `kubectl explain`) by itself. The
only module of `api` that reads the store package: it imports the backends' declarations (plain
data), never a store class or a client library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.alias_generators import to_camel

from trainguard.store import backends
from trainguard.store.backends.declaration import Backend, Credential

__all__ = [
    "BACKENDS",
    "Backend",
    "SecretRefBase",
    "StoreCredentialsRef",
    "backend_of",
    "fold_older_names",
    "store_fields",
]

BACKENDS: tuple[Backend, ...] = tuple(backends.declared().values())
"""Every storage backend, in the order their fields appear in `spec.capture`."""

URI_PATTERN = "^(" + "|".join(b.uri_pattern for b in BACKENDS) + ")$"
"""A run root URI any backend serves (`s3://bucket/prefix`, `file:///path`, ...)."""

URI_EXAMPLES = " or ".join(b.uri_example for b in BACKENDS)


fold_older_names = backends.fold_older_names


def backend_of(uri: str) -> Backend:
    """Return the backend that serves `uri` (`UnknownScheme` when none does)."""
    return backends.for_uri(uri)


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class SecretRefBase(_Model):
    """A Secret holding the store's credentials; its values reach the trainer and sidecar as environment variables."""

    name: str = Field(min_length=1, description="Name of the Secret (same namespace as the DebugJob).")

    def key_of(self, credential: Credential) -> str:
        """Return the Secret's key that holds `credential` (its `<name>Key` field; default: its variable's name)."""
        return str(getattr(self, f"{credential.name}_key"))

    if TYPE_CHECKING:  # the key fields are the backends' (accessKeyIdKey, ...): known at run time only

        def __getattr__(self, name: str) -> str: ...


def _credential_fields() -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for backend in BACKENDS:
        for c in backend.credentials:
            fields[f"{c.name}_key"] = (str, Field(default=c.env, description=c.description))
    return fields


StoreCredentialsRef: type[SecretRefBase] = create_model(
    "StoreCredentialsRef", __base__=SecretRefBase, __doc__=SecretRefBase.__doc__, **_credential_fields()
)

SECRET_REF_DESCRIPTION = (
    "Secret with the store's credentials, by backend: "
    + "; ".join(f"{b.scheme}://: {b.credentials_description}" for b in BACKENDS if b.credentials)
    + "."
)


def store_fields() -> dict[str, Any]:
    """Return `spec.capture`'s store fields for `create_model`: uri, each backend's settings, secret_ref."""
    fields: dict[str, Any] = {
        "uri": (
            str,
            Field(
                pattern=URI_PATTERN,
                description=f"Root URI, {URI_EXAMPLES}. Each run writes under "
                "<uri>/<namespace>/<debugjob>/<uid>/ so reruns never mix.",
            ),
        )
    }
    for backend in BACKENDS:
        for s in backend.settings:
            fields[s.name] = (str | None, Field(default=None, description=s.description))
    fields["secret_ref"] = (
        StoreCredentialsRef | None,
        Field(default=None, description=SECRET_REF_DESCRIPTION),
    )
    return fields
