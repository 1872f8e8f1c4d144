"""Build step that ships the migration files of ``ddl/`` and the example configuration inside the package.

Everything else about the project is declared in pyproject.toml. ``ddl/`` is the one copy of
the migrations in the source tree; a built wheel carries them as
``watcher/schema_tools/migrations_data/`` so ``spanner-watcher migrate`` and ``demo`` work
after ``pip install``. Likewise ``examples/watcher.toml``, which ``watch --help`` names, becomes
``watcher/cli/examples/watcher.toml``. An editable install and a plain source checkout read
``ddl/`` and ``examples/`` themselves (see ``watcher.schema_tools.migrations.migrations_root``
and ``watcher.cli.example_config``).
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup  # type: ignore[import-untyped]
from setuptools.command.build_py import build_py  # type: ignore[import-untyped]

#: The project's migration folders, the one copy in the source tree.
SOURCE_DDL = Path("ddl")
#: Where a built package holds them (the name ``watcher.schema_tools.migrations`` looks for).
PACKAGED_DDL = Path("watcher", "schema_tools", "migrations_data")
#: Example files of the source tree -> where a built package holds them (``watcher.cli.example_config``).
EXAMPLES = {Path("examples", "watcher.toml"): Path("watcher", "cli", "examples", "watcher.toml")}


class BuildPyWithMigrations(build_py):
    """build_py that also copies ``ddl/**/*.sql`` and the example configuration into the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install finds ddl/ beside the package; a copy would go stale
        files = sorted(SOURCE_DDL.rglob("*.sql"))
        if not files:
            raise SystemExit(f"setup.py: no migration files under {SOURCE_DDL}/ (is this the project's root?)")
        copies = [(source, Path(PACKAGED_DDL, source.relative_to(SOURCE_DDL))) for source in files]
        for source, packaged in [*copies, *EXAMPLES.items()]:
            if not source.is_file():
                raise SystemExit(f"setup.py: {source} is missing (is this the project's root?)")
            target = Path(self.build_lib, packaged)
            self.mkpath(str(target.parent))
            self.copy_file(str(source), str(target))


setup(cmdclass={"build_py": BuildPyWithMigrations})
