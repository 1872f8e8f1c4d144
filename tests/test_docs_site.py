"""The documentation: the MkDocs site builds strictly, every link resolves, and the generated blocks are current.

``mkdocs build --strict`` with mkdocs.yml's ``validation`` settings fails on a link to a missing
page, an anchor no heading makes, a nav entry without a page and a page left out of the nav. The
README is not a page of the site (it is the repository's front page), so its relative links are
checked here against the files of the repository and the anchors of the built pages. External
links are not fetched, only checked to be well-formed URLs.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests import docs_reference

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
#: A Markdown link or image target: ``[text](target)`` / ``![alt](target "title")``, outside code.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")

mkdocs = pytest.importorskip("mkdocs", reason="mkdocs is not installed: pip install -e '.[dev]' (./run.sh setup does it)")


def links_in(text: str) -> list[str]:
    """The link targets of Markdown ``text``, leaving out fenced code and code spans.

    >>> links_in("[a](x.md#b) `[c](no)` ![d](img.svg)\\n```\\n[e](no)\\n```")
    ['x.md#b', 'img.svg']
    """
    text = CODE_SPAN.sub("", FENCE.sub("", text))
    return LINK.findall(text)


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a README heading.

    >>> github_slug("Choosing a capture mode: polling, streams & more")
    'choosing-a-capture-mode-polling-streams--more'
    """
    heading = CODE_SPAN.sub(lambda m: m.group(0)[1:-1], heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")


def build(docs_dir: Path, site: Path) -> subprocess.CompletedProcess[str]:
    config = (ROOT / "mkdocs.yml").read_text().replace("docs_dir: docs", f"docs_dir: {docs_dir}")
    config_file = site.parent / "mkdocs.yml"
    config_file.write_text(config)
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config_file),
                           "-d", str(site)], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs") / "site"
    done = build(DOCS, out)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}{done.stderr}"
    return out


def test_the_site_builds_strictly(site: Path) -> None:
    assert (site / "index.html").is_file()
    assert (site / "images" / "architecture.svg").is_file()


def test_a_broken_anchor_fails_the_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    page = docs / "index.md"
    page.write_text(page.read_text() + "\n[nowhere](changelog.md#no-such-heading)\n")
    done = build(docs, tmp_path / "site")
    assert done.returncode != 0 and "no-such-heading" in done.stdout + done.stderr


def test_every_page_is_in_the_nav() -> None:
    import yaml

    def pages(entries: object) -> list[str]:
        if isinstance(entries, str):
            return [entries]
        if isinstance(entries, list):
            return [p for e in entries for p in pages(e)]
        if isinstance(entries, dict):
            return [p for v in entries.values() for p in pages(v)]
        return []

    nav = pages(yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"])
    on_disk = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(nav) == on_disk, "mkdocs.yml's nav and the pages under docs/ differ"


def test_the_readme_links_resolve(site: Path) -> None:
    text = README.read_text()
    slugs = {github_slug(h) for h in re.findall(r"^#{1,6} (.+)$", FENCE.sub("", text), re.M)}
    broken = []
    for target in links_in(text):
        if urlsplit(target).scheme:
            continue  # external: checked by test_external_links_are_well_formed
        path, _, anchor = target.partition("#")
        if not path:
            if anchor not in slugs:
                broken.append(f"{target}: no such heading in README.md")
            continue
        file = (README.parent / path).resolve()
        if not file.exists() or ROOT not in file.parents:
            broken.append(f"{target}: no such file in the repository")
        elif anchor and file.suffix == ".md" and DOCS in file.parents:
            html = (site / file.relative_to(DOCS).with_suffix("") / "index.html")
            if file.name == "index.md":
                html = site / file.parent.relative_to(DOCS) / "index.html"
            if f'id="{anchor}"' not in html.read_text():
                broken.append(f"{target}: no such heading on the page")
    assert not broken, "README.md links that do not resolve:\n" + "\n".join(broken)


@pytest.mark.parametrize("path", [README, *sorted(DOCS.rglob("*.md"))], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_external_links_are_well_formed(path: Path) -> None:
    bad = []
    for target in links_in(path.read_text()):
        parts = urlsplit(target)
        if parts.scheme in ("http", "https") and not (parts.netloc and "." in parts.netloc):
            bad.append(target)
        elif parts.scheme and parts.scheme not in ("http", "https", "mailto"):
            bad.append(target)
    assert not bad, f"malformed external links in {path.name}: {bad}"


@pytest.mark.parametrize("name", sorted(docs_reference.BLOCKS))
def test_the_generated_blocks_are_current(name: str) -> None:
    page, render = docs_reference.BLOCKS[name]
    held = docs_reference.block_in((DOCS / page).read_text(), name)
    assert held is not None, f"docs/{page} lost its generated block {name!r}"
    assert held == render(), (f"docs/{page}: the generated block {name!r} is stale; rewrite it with "
                              ".venv/bin/python -m tests.docs_reference")
