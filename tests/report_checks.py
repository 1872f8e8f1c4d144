"""Checks of the HTML reports the benchmark application and the demo write: one file that opens offline.

Self-contained means: no script, no stylesheet or font or image fetched from anywhere (a ``src``
or a ``<link>`` may only be a ``data:`` URI, CSS holds no ``url(...)`` outside one), while a
plain ``<a href>`` link may point anywhere. Used by the tests that already run a benchmark or a
demo, so that checking a report costs no run of its own.

Example:
    >>> page = '<html><img src="data:image/png;base64,iVBORw0KGgo="><a href="https://example.com">x</a></html>'
    >>> sorted(references(page).items())
    [('a.href', ['https://example.com']), ('img.src', ['data:image/png;base64,iVBORw0KGgo='])]
    >>> fetched(page), fetched('<script src="https://cdn.example/x.js"></script>')
    ([], ['script', 'script.src=https://cdn.example/x.js'])
"""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser
from pathlib import Path

#: Attributes that make a browser fetch something; ``<a href>`` is a link a user follows, not fetched.
FETCHING = {"src", "srcset", "poster", "data", "background"}
#: Elements that fetch or run something whatever their attributes.
NOT_ALLOWED = {"script", "iframe", "object", "embed", "base"}
_CSS_URL = re.compile(r"url\(\s*['\"]?(?!data:)([^'\")]+)", re.I)
_PNG = re.compile(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"')


class _References(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, list[str]] = {}
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if value is not None and (name in FETCHING or name == "href"):
                self.found.setdefault(f"{tag}.{name}", []).append(value)


def references(html: str) -> dict[str, list[str]]:
    """Every ``tag.attribute`` that names a resource or a link -> its values."""
    parser = _References()
    parser.feed(html)
    return parser.found


def fetched(html: str) -> list[str]:
    """What opening the page would fetch or run: disallowed elements, and non-``data:`` resources."""
    parser = _References()
    parser.feed(html)
    bad = [tag for tag in parser.tags if tag in NOT_ALLOWED]
    for key, values in parser.found.items():
        tag, attr = key.split(".")
        if attr == "href" and tag != "link":
            continue   # a link the reader may follow
        bad += [f"{key}={v}" for v in values if not v.startswith("data:")]
    bad += [f"css url({u})" for u in _CSS_URL.findall(html)]
    return bad


def check_report(path: Path, *figures: str, pngs: int = 0) -> str:
    """Assert ``path`` is a self-contained HTML page holding each of ``figures`` (as text) and ``pngs``
    inline PNG images; its text."""
    assert path.is_file(), f"no report at {path}"
    html = path.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>"), html[:200]
    assert fetched(html) == [], f"{path} is not self-contained: {fetched(html)}"
    missing = [f for f in figures if f not in html]
    assert not missing, f"{path} lacks {missing}"
    images = _PNG.findall(html)
    assert len(images) == pngs, f"{path}: {len(images)} inline PNGs, expected {pngs}"
    for data in images:
        assert base64.b64decode(data)[:8] == b"\x89PNG\r\n\x1a\n"
    return html
