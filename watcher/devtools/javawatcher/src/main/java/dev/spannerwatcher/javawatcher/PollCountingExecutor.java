package dev.spannerwatcher.javawatcher;

import java.util.concurrent.RunnableScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;

/**
 * The tailer's executor (one daemon thread, like the library's own) that reports each poll it
 * schedules. The library has no poll callback; every poll is one scheduled SpannerTailerRunner,
 * and the next is scheduled only after the previous one finished (rows delivered, checkpoint
 * written), so when the n-th poll is scheduled, n - 1 polls are complete.
 */
final class PollCountingExecutor extends ScheduledThreadPoolExecutor {
  private static final String POLL_TASK = "SpannerTailerRunner";
  private final Runnable onPoll;

  PollCountingExecutor(Runnable onPoll) {
    super(1, runnable -> {
      Thread thread = new Thread(runnable, "javawatcher-tailer");
      thread.setDaemon(true);
      return thread;
    });
    this.onPoll = onPoll;
  }

  @Override
  protected <V> RunnableScheduledFuture<V> decorateTask(Runnable runnable, RunnableScheduledFuture<V> task) {
    if (runnable.getClass().getSimpleName().equals(POLL_TASK)) {
      onPoll.run();
    }
    return task;
  }
}
