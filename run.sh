#!/usr/bin/env bash
# One entry point for a fresh machine: sets everything up, then runs what you ask for.
#   ./run.sh demo     set up and run the end-to-end demo on the embedded local Spanner
#   ./run.sh test     set up and run the test suite
#   ./run.sh setup    only set up (.venv with the project, every extra and the test tools)
# Any other arguments are passed to the `spanner-watcher` command inside the venv.
set -euo pipefail
cd "$(dirname "$0")"

VENV="${SPANNER_WATCHER_VENV:-.venv}"
PY="${PYTHON:-python3}"

need_java() {
  # PySpark 4 needs Java 17 or newer; the changelog's JVM functions are compiled with its javac
  # (without one they take their slower SQL path: watcher/changelog/spark/jvm).
  local v=""
  if command -v java >/dev/null 2>&1; then
    v=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
  fi
  if [ -n "$v" ] && [ "$v" -ge 17 ] && command -v javac >/dev/null 2>&1; then return 0; fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "run.sh: installing the Java 17 JDK (PySpark needs Java; javac builds the changelog's JVM functions) with apt-get" >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
  elif [ -z "$v" ] || [ "$v" -lt 17 ]; then
    echo "run.sh: Java 17+ is missing; install it (e.g. apt-get install openjdk-17-jdk-headless). Spark parts will not run." >&2
  else
    echo "run.sh: javac is missing (e.g. apt-get install openjdk-17-jdk-headless); the changelog takes its slower SQL path." >&2
  fi
}

setup() {
  need_java
  if [ ! -x "$VENV/bin/python" ]; then
    echo "run.sh: creating virtual environment $VENV" >&2
    "$PY" -m venv "$VENV"
  fi
  local stamp="$VENV/.installed-$(sha1sum pyproject.toml | cut -c1-12)"
  if [ ! -f "$stamp" ]; then
    echo "run.sh: installing the project and its dependencies into $VENV" >&2
    "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
    "$VENV/bin/python" -m pip install -q -e ".[spark,kafka,bench,dev]"
    rm -f "$VENV"/.installed-* && touch "$stamp"
  fi
  # Delta Lake's jars, resolved by Spark's package mechanism into its cache once (the warehouse's tables are Delta tables).
  "$VENV/bin/python" -c 'import sys; from watcher.changelog.tables import runtime; sys.exit(runtime.main())' >/dev/null 2>&1 || echo "run.sh: Delta Lake's jars were not resolved; the first Spark job tries again" >&2
  # The JVM functions' jar, built once per source (cached); on failure it says why, and jobs take the SQL path.
  "$VENV/bin/python" -c 'import sys; from watcher.changelog.spark.jvm import jar; sys.exit(jar.main())' >/dev/null || true
  # The Java Spanner Change Watcher's program (watcher/devtools/javawatcher, Maven; cached per source digest,
  # jars in ~/.m2) for the handover tests; without mvn those tests skip, on failure one line says why.
  if command -v mvn >/dev/null 2>&1; then
    "$VENV/bin/python" -m watcher.devtools.java_library >/dev/null || true
    # The Kafka broker's jars for the sink tests (watcher/devtools/kafka/pom.xml, resolved once per pom digest,
    # jars in ~/.m2) and its JVM class-data archive; without mvn those tests skip, on failure one line says why.
    "$VENV/bin/python" -m watcher.devtools.kafka_broker >/dev/null || true
  fi
}

cmd="${1:-demo}"
[ $# -gt 0 ] && shift
case "$cmd" in
  setup) setup ;;
  test)  setup; exec "$VENV/bin/python" -m pytest "$@" ;;
  demo)  setup; exec "$VENV/bin/spanner-watcher" demo "$@" ;;
  *)     setup; exec "$VENV/bin/spanner-watcher" "$cmd" "$@" ;;
esac
