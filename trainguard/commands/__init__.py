"""Subcommands of `trainguard`, one module each (discovered by `trainguard.cli`)."""
