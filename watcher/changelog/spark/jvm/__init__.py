"""JVM functions shipped with the package: changelog steps that Spark SQL's built-ins make costly.

One so far, ``OldValues`` (``OldValues.java`` in this folder): an update's old values, the
fast path of :mod:`watcher.changelog.rules.old_values`, in one pass over the two rows' JSON texts
instead of a regular-expression split of every row, its lags through the per-key window and a
set difference. It gives the same text as that SQL, row for row (tests/changelog/test_jvm_old_values.py).

There is no Maven here and no jar in the source tree: :mod:`.jar` compiles the source with the
JDK's ``javac`` against pyspark's own API jar into a jar cached by the source's digest (``run.sh
setup`` builds it ahead); :mod:`.registry` adds the jar to a session (``ADD JAR``, which also
ships it to a cluster's executors, or a Spark Connect artifact) and registers the function.
Where any of that fails (no JDK, a server that refuses artifacts) the changelog keeps its SQL
path: the same results, slower, and one warning saying why.
"""
