"""The root of every error TrainGuard raises on purpose.

Each subpackage derives its own small hierarchy from `TrainGuardError` and chains the
underlying cause with `raise ... from err`. Messages name the object, the field or key,
what was expected, what was found and what to do, so the CLI can print `str(err)` as one line.
"""

from __future__ import annotations


class TrainGuardError(Exception):
    """Base class: an error with a message meant for the person running TrainGuard."""


class ConfigError(TrainGuardError):
    """A configuration (rules file, hook settings, sidecar config) is invalid."""
