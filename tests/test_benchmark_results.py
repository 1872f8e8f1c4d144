"""benchmarks/RESULTS.md shows, per benchmark, what its current JSON result says."""

from __future__ import annotations

import doctest

from benchmarks import results_page


def test_results_page_examples() -> None:
    assert doctest.testmod(results_page).failed == 0


def test_every_section_matches_its_result() -> None:
    stale = results_page.stale()
    assert not stale, (f"RESULTS.md's generated blocks of {stale} differ from benchmarks/results/: "
                       "run `python -m benchmarks.results_page`")


def test_a_new_result_replaces_only_its_block(tmp_path) -> None:
    page = tmp_path / "RESULTS.md"
    page.write_text("# Benchmark results\n\n<!-- x:begin -->\n## x: old title\n\nprose kept\n<!-- x:end -->\n")
    document = {"benchmark": "x", "title": "t", "command": "python -m benchmarks s", "seconds": 1.0, "date": "2026-12-02",
                "machine": {}, "checks": [{"name": "rate", "value": 2, "op": ">=", "target": 1, "passed": True}]}
    results_page.record(document, str(page))
    document["checks"][0].update(value=0.5, passed=False)
    results_page.record(document, str(page))
    text = page.read_text()
    assert text.count("x:summary:begin") == 1 and "prose kept" in text and "| rate >= 1 | 0.5 | **FAIL** |" in text
