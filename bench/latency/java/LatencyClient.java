// Statement latency through the Arrow Flight SQL JDBC driver: Statement.executeQuery, every row
// read, hot, with one connection and with N connections at once (a thread each). Prints one JSON
// line per phase, as bench/latency/go does. Run by bench/latency/bench.py:
//   java -cp <driver classpath> LatencyClient.java host port user key seconds clients warmup sql
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CyclicBarrier;

public class LatencyClient {
  interface Runner {
    long run() throws Exception;
  }

  /** Runs `sql` on `statement` and reads every value of every row (InterleaveClient runs its statements so too). */
  static long drain(Statement statement, String sql) throws Exception {
    long rows = 0;
    try (ResultSet rs = statement.executeQuery(sql)) {
      int columns = rs.getMetaData().getColumnCount();
      while (rs.next()) {
        for (int i = 1; i <= columns; i++) rs.getObject(i);
        rows++;
      }
    }
    return rows;
  }

  static Runner connect(String url, String sql) throws Exception {
    Connection connection = DriverManager.getConnection(url);
    Statement statement = connection.createStatement();
    return () -> drain(statement, sql);
  }

  static String env(String name, String fallback) {
    String value = System.getenv(name);
    return value == null || value.isEmpty() ? fallback : value;
  }

  static void report(String phase, List<Double> times, double seconds, long rows) {
    Collections.sort(times);
    double p50 = times.isEmpty() ? 0 : times.get((int) Math.round(0.50 * (times.size() - 1)));
    double p99 = times.isEmpty() ? 0 : times.get((int) Math.round(0.99 * (times.size() - 1)));
    System.out.printf(
        "{\"client\":\"jdbc\",\"phase\":\"%s\",\"n\":%d,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"per_s\":%.1f,\"rows\":%d}%n",
        phase, times.size(), p50, p99, times.size() / seconds, rows);
    System.out.flush();
  }

  /** Tells bench.py that a phase's timed part starts now (it reads the server's and this JVM's CPU then). */
  static void mark(String phase) {
    System.out.printf("{\"client\":\"jdbc\",\"mark\":\"%s\"}%n", phase);
    System.out.flush();
  }

  public static void main(String[] args) throws Exception {
    String url = "jdbc:arrow-flight-sql://" + args[0] + ":" + args[1] + "?useEncryption=false&user=" + args[2]
        + "&password=" + args[3];
    double seconds = Double.parseDouble(args[4]);
    int clients = Integer.parseInt(args[5]);
    int warmup = Integer.parseInt(args[6]);
    String sql = args[7];
    long nanos = (long) (seconds * 1e9);

    Runner one = connect(url, sql);
    long rows = 0;
    // The JVM compiles the driver's paths as they run (its C2 compiler after thousands of calls): a "hot"
    // JDBC statement is one after JVM_WARMUP statements (default 3,000), not 200, after which `SELECT 1`
    // still took 3-4x as long (bench/latency/PROFILE.md, s20). Bounded by JVM_WARMUP_SECONDS (default 15)
    // on a machine too loaded to get there.
    long warmEnd = System.nanoTime() + (long) (Double.parseDouble(env("JVM_WARMUP_SECONDS", "15")) * 1e9);
    int warmups = Math.max(warmup, Integer.parseInt(env("JVM_WARMUP", "3000")));
    for (int i = 0; i < warmups && (i < warmup || System.nanoTime() < warmEnd); i++) rows = one.run();
    List<Double> times = new ArrayList<>();
    mark("1");
    long start = System.nanoTime();
    while (System.nanoTime() - start < nanos) {
      long t0 = System.nanoTime();
      rows = one.run();
      times.add((System.nanoTime() - t0) / 1e6);
    }
    report("1", times, (System.nanoTime() - start) / 1e9, rows);

    List<Runner> runners = new ArrayList<>();
    for (int i = 0; i < clients; i++) {
      Runner r = connect(url, sql);
      for (int w = 0; w < 20; w++) r.run();
      runners.add(r);
    }
    List<List<Double>> perClient = new ArrayList<>();
    List<Thread> threads = new ArrayList<>();
    CyclicBarrier barrier = new CyclicBarrier(clients + 1);
    Exception[] failure = new Exception[1];
    for (Runner r : runners) {
      List<Double> mine = new ArrayList<>();
      perClient.add(mine);
      Thread t = new Thread(() -> {
        try {
          barrier.await();
          long end = System.nanoTime() + nanos;
          while (System.nanoTime() < end) {
            long t0 = System.nanoTime();
            r.run();
            mine.add((System.nanoTime() - t0) / 1e6);
          }
        } catch (Exception e) {
          failure[0] = e;
        }
      });
      t.start();
      threads.add(t);
    }
    mark(String.valueOf(clients));
    barrier.await();
    start = System.nanoTime();
    for (Thread t : threads) t.join();
    double elapsed = (System.nanoTime() - start) / 1e9;
    if (failure[0] != null) throw failure[0];
    List<Double> all = new ArrayList<>();
    for (List<Double> ts : perClient) all.addAll(ts);
    report(String.valueOf(clients), all, elapsed, rows);
    System.exit(0);
  }
}
