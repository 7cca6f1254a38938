package dev.orrery.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Issue 10: Statement.cancel() from another thread stops a statement Orrery is running. */
class CancelTest {
  private static final String HUGE_CROSS_JOIN =
      "SELECT count(*) FROM range(100000000) a, range(100000000) b WHERE a.range + b.range < 0";

  @Test
  void cancelStopsARunningStatement() throws Exception {
    try (Connection conn = OrreryEnv.reader(); Statement statement = conn.createStatement()) {
      AtomicReference<Throwable> outcome = new AtomicReference<>();
      Thread worker =
          new Thread(
              () -> {
                try (ResultSet rs = statement.executeQuery(HUGE_CROSS_JOIN)) {
                  while (rs.next()) {
                    // drain
                  }
                  outcome.set(new AssertionError("the statement finished instead of being cancelled"));
                } catch (Throwable error) {
                  outcome.set(error);
                }
              });
      worker.start();
      // The cancel may land before the statement reaches the server: repeat it until the call ends.
      for (int i = 0; i < 150 && worker.isAlive(); i++) {
        worker.join(200);
        if (worker.isAlive()) {
          statement.cancel();
        }
      }
      worker.join(5000);
      assertFalse(worker.isAlive(), "the statement was still running after 30 s of cancels");
      assertInstanceOf(SQLException.class, outcome.get(), String.valueOf(outcome.get()));
    }
    try (Connection conn = OrreryEnv.reader();
        Statement statement = conn.createStatement();
        ResultSet rs = statement.executeQuery("SELECT 41 + 1 AS n")) {
      rs.next();
      assertEquals(42, rs.getInt(1));
    }
  }
}
