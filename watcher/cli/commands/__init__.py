"""Subcommands of the ``spanner-watcher`` command line, one module each (see ``watcher.cli.main``)."""
