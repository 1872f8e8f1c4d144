package dev.spannerwatcher.javawatcher;

import com.google.api.core.ApiService;
import com.google.cloud.Timestamp;
import com.google.cloud.spanner.DatabaseId;
import com.google.cloud.spanner.SessionPoolOptions;
import com.google.cloud.spanner.Spanner;
import com.google.cloud.spanner.SpannerOptions;
import com.google.cloud.spanner.watcher.FixedShardProvider;
import com.google.cloud.spanner.watcher.SpannerCommitTimestampRepository;
import com.google.cloud.spanner.watcher.SpannerTableTailer;
import com.google.cloud.spanner.watcher.SpannerUtils;
import com.google.cloud.spanner.watcher.TableId;
import com.google.common.util.concurrent.MoreExecutors;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.threeten.bp.Duration;  // the library's poll interval type

/**
 * Runs the Java Spanner Change Watcher's SpannerTableTailer on one table and prints what it
 * receives, one JSON object a line on stdout. The single argument is the JSON config (or
 * {@code @file}); see watcher/devtools/java_library.py for its fields. Connects to
 * SPANNER_EMULATOR_HOST (plaintext, no credentials) when it is set.
 *
 * <p>Lines: {@code started} once the tailer runs, {@code change} per row, {@code stopped} last
 * (why, counts, the process's CPU time). Mode {@code checkpoints} instead writes one checkpoint
 * row per given shard value through the library's SpannerCommitTimestampRepository.
 */
public final class Main {
  private final CountDownLatch stop = new CountDownLatch(1);
  private final CountDownLatch finished = new CountDownLatch(1);
  private volatile String reason;
  private final AtomicLong changes = new AtomicLong();
  private final AtomicInteger polls = new AtomicInteger();
  private final AtomicInteger pollsSinceChange = new AtomicInteger();

  public static void main(String[] args) throws Exception {
    if (args.length != 1) {
      System.err.println("usage: javawatcher <config JSON | @config-file>");
      System.exit(64);
    }
    String text = args[0].startsWith("@") ? Files.readString(Path.of(args[0].substring(1))) : args[0];
    JsonObject config = JsonParser.parseString(text).getAsJsonObject();
    System.exit(new Main().run(config));
  }

  private int run(JsonObject config) throws Exception {
    DatabaseId db = DatabaseId.of(
        required(config, "project"), required(config, "instance"), required(config, "database"));
    SpannerOptions.Builder options = SpannerOptions.newBuilder().setProjectId(db.getInstanceId().getProject());
    if (config.has("min_sessions")) {
      options.setSessionPoolOption(
          SessionPoolOptions.newBuilder().setMinSessions(config.get("min_sessions").getAsInt()).build());
    }
    Spanner spanner = options.build().getService();
    try {
      SpannerCommitTimestampRepository repository = repository(spanner, db, config);
      if ("checkpoints".equals(optional(config, "mode"))) {
        return writeCheckpoints(repository, db, config);
      }
      return watch(spanner, db, repository, config);
    } finally {
      spanner.close();
    }
  }

  private static SpannerCommitTimestampRepository repository(Spanner spanner, DatabaseId db, JsonObject config) {
    SpannerCommitTimestampRepository.Builder builder = SpannerCommitTimestampRepository.newBuilder(spanner, db);
    if (config.has("checkpoint_table")) {
      builder.setCommitTimestampsTable(config.get("checkpoint_table").getAsString());
    }
    String initial = optional(config, "initial_commit_timestamp");
    if ("min".equals(initial)) {
      builder.setInitialCommitTimestamp(Timestamp.MIN_VALUE);
    } else if (initial != null) {
      builder.setInitialCommitTimestamp(Timestamp.parseTimestamp(initial));
    }
    return builder.build();
  }

  /** Mode checkpoints: {"shards": [{"table": T, "type": X, "value": V}, ...], "commit_timestamp": TS}. */
  private static int writeCheckpoints(SpannerCommitTimestampRepository repository, DatabaseId db, JsonObject config) {
    Timestamp ts = Timestamp.parseTimestamp(required(config, "commit_timestamp"));
    for (JsonElement item : config.getAsJsonArray("shards")) {
      JsonObject shard = item.getAsJsonObject();
      TableId table = TableId.of(db, shard.get("table").getAsString());
      if (shard.has("type")) {
        repository.set(table, Values.parse(shard.get("type").getAsString(), shard.get("value")), ts);
      } else {
        repository.set(table, ts);
      }
      JsonObject line = new JsonObject();
      line.addProperty("event", "checkpoint");
      line.addProperty("table", table.getTable());
      print(line);
    }
    JsonObject stopped = new JsonObject();
    stopped.addProperty("event", "stopped");
    stopped.addProperty("reason", "checkpoints_written");
    stopped.addProperty("cpu_ns", cpuNanos());
    print(stopped);
    return 0;
  }

  private int watch(Spanner spanner, DatabaseId db, SpannerCommitTimestampRepository repository, JsonObject config)
      throws Exception {
    TableId table = TableId.of(db, required(config, "table"));
    int idlePolls = config.has("stop_after_idle_polls") ? config.get("stop_after_idle_polls").getAsInt() : -1;
    long maxChanges = config.has("stop_after_changes") ? config.get("stop_after_changes").getAsLong() : -1;
    PollCountingExecutor executor = new PollCountingExecutor(() -> {
      polls.incrementAndGet();
      if (idlePolls >= 0 && pollsSinceChange.incrementAndGet() > idlePolls) {
        requestStop("idle_polls");
      }
    });
    SpannerTableTailer.Builder builder = SpannerTableTailer.newBuilder(spanner, table)
        .setCommitTimestampRepository(repository)
        .setPollInterval(Duration.ofMillis(config.has("poll_interval_ms") ? config.get("poll_interval_ms").getAsLong() : 1000))
        .setExecutor(executor);
    if (config.has("limit")) {
      builder.setLimit(config.get("limit").getAsLong());
    }
    if (config.has("fallback_to_with_query_seconds")) {
      builder.setFallbackToWithQuerySeconds(config.get("fallback_to_with_query_seconds").getAsInt());
    }
    if (config.has("table_hint")) {
      builder.setTableHint(config.get("table_hint").getAsString());
    }
    if (config.has("shard")) {
      JsonObject shard = config.getAsJsonObject("shard");
      builder.setShardProvider(FixedShardProvider.create(
          shard.get("column").getAsString(), Values.parse(shard.get("type").getAsString(), shard.get("value"))));
    }
    List<String> keyColumns = SpannerUtils.getPrimaryKeyColumns(spanner.getDatabaseClient(db), table).get();
    SpannerTableTailer tailer = builder.build();
    tailer.addCallback((t, row, commitTimestamp) -> {
      long received = epochNanos(Instant.now());
      pollsSinceChange.set(0);
      JsonObject line = new JsonObject();
      line.addProperty("event", "change");
      line.addProperty("table", t.getTable());
      JsonArray keys = new JsonArray();
      for (String column : keyColumns) {
        keys.add(Values.column(row, row.getColumnIndex(column)));
      }
      line.add("keys", keys);
      line.addProperty("commit_timestamp", Values.rfc3339(commitTimestamp));
      line.addProperty("received_ns", received);
      line.add("values", Values.row(row));
      print(line);
      if (changes.incrementAndGet() == maxChanges) {
        requestStop("changes");
      }
    });
    tailer.addListener(new ApiService.Listener() {
      @Override
      public void failed(ApiService.State from, Throwable failure) {
        requestStop("failed");
      }
    }, MoreExecutors.directExecutor());
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      requestStop("signal");
      awaitQuietly(finished, 10);
    }));
    if (config.has("stop_on_stdin_close") && config.get("stop_on_stdin_close").getAsBoolean()) {
      Thread stdin = new Thread(() -> {
        drain(System.in);
        requestStop("stdin_closed");
      }, "javawatcher-stdin");
      stdin.setDaemon(true);
      stdin.start();
    }

    String failure = null;
    try {
      tailer.startAsync().awaitRunning();
      JsonObject started = new JsonObject();
      started.addProperty("event", "started");
      started.addProperty("time_ns", epochNanos(Instant.now()));
      started.addProperty("cpu_ns", cpuNanos());
      print(started);
      if (config.has("stop_after_seconds")) {
        if (!stop.await((long) (config.get("stop_after_seconds").getAsDouble() * 1000), TimeUnit.MILLISECONDS)) {
          requestStop("seconds");
        }
      } else {
        stop.await();
      }
      if (tailer.state() != ApiService.State.FAILED) {
        tailer.stopAsync().awaitTerminated();
      }
    } catch (IllegalStateException e) {
      requestStop("failed");  // awaitRunning/awaitTerminated: the tailer failed
    }
    if (tailer.state() == ApiService.State.FAILED) {
      failure = String.valueOf(tailer.failureCause());
    }
    executor.shutdown();
    JsonObject stopped = new JsonObject();
    stopped.addProperty("event", "stopped");
    stopped.addProperty("reason", reason);
    stopped.addProperty("state", tailer.state().name());
    stopped.addProperty("failure", failure);
    stopped.addProperty("changes", changes.get());
    stopped.addProperty("polls", polls.get());
    stopped.addProperty("cpu_ns", cpuNanos());
    print(stopped);
    finished.countDown();
    return failure == null ? 0 : 1;
  }

  private void requestStop(String why) {
    synchronized (this) {
      if (reason == null) {
        reason = why;
      }
    }
    stop.countDown();
  }

  private static synchronized void print(JsonObject line) {
    System.out.println(line);  // System.out flushes each line: readers see changes as they arrive
  }

  private static String optional(JsonObject config, String name) {
    return config.has(name) && !config.get(name).isJsonNull() ? config.get(name).getAsString() : null;
  }

  private static String required(JsonObject config, String name) {
    String value = optional(config, name);
    if (value == null) {
      throw new IllegalArgumentException("config lacks \"" + name + "\"");
    }
    return value;
  }

  private static long epochNanos(Instant now) {
    return now.getEpochSecond() * 1_000_000_000L + now.getNano();
  }

  private static long cpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }

  private static void drain(InputStream in) {
    byte[] buffer = new byte[4096];
    try {
      while (in.read(buffer) >= 0) {
        // input is ignored: only its end matters
      }
    } catch (IOException e) {
      // a broken stdin ends the run like a closed one
    }
  }

  private static void awaitQuietly(CountDownLatch latch, int seconds) {
    try {
      latch.await(seconds, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
