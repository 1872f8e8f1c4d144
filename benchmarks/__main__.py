"""``python -m benchmarks <suite> [--quick] [--only NAME ...] [--results DIR]``: run a benchmark suite.

Each benchmark writes ``<results>/<name>.json`` (default ``benchmarks/results``, and then the
generated block of its section of RESULTS.md: :mod:`.results_page`); the exit status is 0 when every benchmark ran and met its targets, 1 when a target was
missed, 2 when a benchmark failed to run.

Example:
    $ python -m benchmarks localspanner --quick
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import sys
import tempfile
import time
import traceback

from . import SUITES, RunContext, command_line, result_document, results_page, speed_probe_ms, write_result

DEFAULT_RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description="Run a benchmark suite and write JSON results.")
    parser.add_argument("suite", choices=sorted(SUITES), help="the suite to run")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke test of the runner, not a measurement")
    parser.add_argument("--only", nargs="+", metavar="NAME", default=None,
                        help="run only these benchmarks of the suite (by NAME or module, e.g. localspanner_poll)")
    parser.add_argument("--results", metavar="DIR", default=DEFAULT_RESULTS, help=f"folder for the JSON results (default {DEFAULT_RESULTS})")
    parser.add_argument("--workdir", metavar="DIR", default=None,
                        help="folder for the benchmarks' data (default: a temporary folder, deleted afterwards)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else list(argv)
    args = parse(args_list)
    modules = [importlib.import_module(path) for path in SUITES[args.suite]]
    if args.only:
        wanted = set(args.only)
        unknown = wanted - {m.NAME for m in modules} - {m.__name__.rsplit(".", 1)[-1] for m in modules}
        if unknown:
            print(f"unknown benchmark(s) {sorted(unknown)}; suite {args.suite} has {[m.NAME for m in modules]}", file=sys.stderr)
            return 2
        modules = [m for m in modules if m.NAME in wanted or m.__name__.rsplit(".", 1)[-1] in wanted]

    workdir = args.workdir or tempfile.mkdtemp(prefix=f"bench-{args.suite}-")
    os.makedirs(workdir, exist_ok=True)
    command = command_line(args_list)
    status = 0
    try:
        for module in modules:
            print(f"== {module.NAME}: {module.TITLE}", flush=True)
            ctx = RunContext(quick=args.quick, workdir=workdir, log=lambda msg: print(f"   {msg}", flush=True))
            started = time.perf_counter()
            load_at_start = [round(x, 2) for x in os.getloadavg()]
            probe_at_start = speed_probe_ms()
            try:
                result = module.run(ctx)
            except Exception:  # noqa: BLE001 - one broken benchmark must not stop the others
                traceback.print_exc()
                status = 2
                continue
            document = result_document(module.NAME, module.TITLE, command, args.quick, time.perf_counter() - started, result)
            document["machine"]["load_average_at_start_1_5_15"] = load_at_start
            document["machine"]["speed_probe_ms_at_start"] = probe_at_start
            path = write_result(args.results, document)
            if os.path.abspath(args.results) == DEFAULT_RESULTS and not args.quick:
                results_page.record(document)  # the section's generated block follows its current result
            for c in result.checks:
                print(f"   {'PASS' if c.passed else 'FAIL'} {c.name}: {c.value} {c.op} {c.target}", flush=True)
            print(f"   -> {path} ({document['seconds']} s)", flush=True)
            if not result.passed and status == 0:
                status = 1
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
