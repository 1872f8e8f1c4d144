"""The ``spanner-watcher`` command line: the command (:mod:`.main`), its TOML configuration
(:mod:`.config`), the choice of database (:mod:`.connection`) and one module per subcommand
(:mod:`.commands`)."""

from __future__ import annotations

from .main import PROG, CommandError, main

__all__ = ["PROG", "CommandError", "main"]
