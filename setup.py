"""Build step that ships the migration files of ``ddl/`` inside the package.

Everything else about the project is declared in pyproject.toml. ``ddl/`` is the one copy of
the migrations in the source tree; a built wheel carries them as
``watcher/schema_tools/migrations_data/`` so ``spanner-watcher migrate`` and ``demo`` work
after ``pip install``. An editable install and a plain source checkout read ``ddl/`` itself
(see ``watcher.schema_tools.migrations.migrations_root``).
"""

from __future__ import annotations

from pathlib import Path

from setuptools import setup  # type: ignore[import-untyped]
from setuptools.command.build_py import build_py  # type: ignore[import-untyped]

#: The project's migration folders, the one copy in the source tree.
SOURCE_DDL = Path("ddl")
#: Where a built package holds them (the name ``watcher.schema_tools.migrations`` looks for).
PACKAGED_DDL = Path("watcher", "schema_tools", "migrations_data")


class BuildPyWithMigrations(build_py):
    """build_py that also copies ``ddl/**/*.sql`` into the built package."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install finds ddl/ beside the package; a copy would go stale
        files = sorted(SOURCE_DDL.rglob("*.sql"))
        if not files:
            raise SystemExit(f"setup.py: no migration files under {SOURCE_DDL}/ (is this the project's root?)")
        for source in files:
            target = Path(self.build_lib, PACKAGED_DDL, source.relative_to(SOURCE_DDL))
            self.mkpath(str(target.parent))
            self.copy_file(str(source), str(target))


setup(cmdclass={"build_py": BuildPyWithMigrations})
