"""Environments that hold what ``pip install <wheel>[extras]`` would put there, and nothing else, offline.

:func:`closure` follows a wheel's requirements (markers and extras evaluated, as pip does)
through this interpreter's installed distributions; :func:`closure_env` makes a fresh virtual
environment that sees exactly those distributions: their files are symbolic links into this
interpreter's site-packages, in a folder the environment adds as a site folder (so their
``.pth`` files work too). No package index, no copies, a second or two; and a package outside
the closure (pyspark, for a core install) cannot be imported there, as after a real install.

Example:
    >>> sorted(closure(["google-cloud-spanner"]))[:3]  # doctest: +SKIP
    ['cachetools', 'certifi', 'charset-normalizer']
"""

from __future__ import annotations

import email.parser
import os
import subprocess
import venv
import zipfile
from collections import defaultdict
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def wheel_requirements(wheel: Path) -> list[str]:
    """The ``Requires-Dist`` lines of a built wheel (markers and extras as written)."""
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(z.read(name).decode("utf-8"))
    return meta.get_all("Requires-Dist") or []


def _installed() -> dict[str, metadata.Distribution]:
    found: dict[str, metadata.Distribution] = {}
    for dist in metadata.distributions():
        found.setdefault(canonicalize_name(dist.metadata["Name"]), dist)   # the first on sys.path, as imports see it
    return found


def closure(requirements: Iterable[str], extras: Iterable[str] = (), *,
            installed: dict[str, metadata.Distribution] | None = None) -> dict[str, metadata.Distribution]:
    """Every installed distribution that ``requirements`` (with ``extras`` chosen) pull in, by name."""
    installed = _installed() if installed is None else installed
    chosen: dict[str, set[str]] = {}
    queue = [(text, {"", *extras}) for text in requirements]
    while queue:
        text, active = queue.pop()
        req = Requirement(text)
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in active):
            continue
        name = canonicalize_name(req.name)
        if name not in installed:
            raise LookupError(f"{req.name} (required as {text!r}) is not installed in this interpreter: "
                              "pip install -e '.[test]' installs every extra")
        wanted = {canonicalize_name(e) for e in req.extras}
        if name in chosen and wanted <= chosen[name]:
            continue
        chosen[name] = chosen.get(name, set()) | wanted
        queue.extend((dep, {"", *chosen[name]}) for dep in installed[name].requires or [])
    return {name: installed[name] for name in chosen}


def _files(dist: metadata.Distribution) -> list[Path]:
    """A distribution's files inside its site folder, relative to it (scripts and caches left out)."""
    return [Path(f) for f in dist.files or [] if f.parts and f.parts[0] not in ("..", "__pycache__")]


def link_site(target: Path, dists: dict[str, metadata.Distribution],
              installed: dict[str, metadata.Distribution] | None = None) -> Path:
    """A site folder at ``target`` of symbolic links to ``dists``' files: a top-level entry whole when only
    these distributions have files in it, else file by file (a namespace another distribution shares)."""
    installed = _installed() if installed is None else installed
    owners: dict[str, set[str]] = defaultdict(set)
    for name, dist in installed.items():
        for f in _files(dist):
            owners[f.parts[0]].add(name)
    target.mkdir(parents=True)
    for dist in dists.values():
        base = Path(str(dist.locate_file("")))
        for f in _files(dist):
            top = f.parts[0]
            whole = owners[top] <= dists.keys()
            entry = Path(top) if whole else f
            link = target / entry
            if link.exists() or link.is_symlink() or not (base / entry).exists():
                continue
            link.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(base / entry, link)
    return target


def closure_env(path: Path, wheel: Path, extras: Iterable[str] = ()) -> Path:
    """A fresh environment at ``path`` seeing the distributions ``wheel[extras]`` needs (not the wheel itself:
    install it with ``pip --python <returned python> install --no-deps``); its python's path."""
    installed = _installed()
    dists = closure(wheel_requirements(wheel), extras, installed=installed)
    site = link_site(path.with_name(path.name + "-site"), dists, installed)
    venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(path)
    python = path / ("Scripts" if os.name == "nt" else "bin") / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    Path(purelib, "spanner_watcher_closure.pth").write_text(f"import site; site.addsitedir({str(site)!r})\n")
    return python
