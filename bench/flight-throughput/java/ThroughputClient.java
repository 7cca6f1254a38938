// A large result through a JDBC driver, read as JDBC tools read it: every row, every column by its
// typed getter (getLong, getDouble, getTimestamp, getString). Prints one JSON line per timed run:
// seconds, rows and sum(i), for bench/flight-throughput/bench.py to check. The same reader runs
// against Orrery (the Arrow Flight SQL JDBC driver) and in-process DuckDB (DuckDB's JDBC driver).
// `rows` as the last argument steps through the rows with ResultSet.next() and reads column 1 alone:
// the driver's cursor without the other getters (issue 10 item 3; FlightSqlThroughputClient.java
// reads the same result with the Java Flight SQL client the driver runs on).
//   java -cp <driver classpath> ThroughputClient.java jdbc-url warmup repeats sql [getters|rows]
// With `-` for repeats, each timed run starts when a line arrives on stdin (until its end), so that
// bench.py can alternate this JVM's runs with other readers' while its JIT stays warm.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;

public class ThroughputClient {
  public static void main(String[] args) throws Exception {
    String url = args[0];
    int warmup = Integer.parseInt(args[1]);
    boolean onRequest = args[2].equals("-");
    int repeats = onRequest ? Integer.MAX_VALUE - warmup : Integer.parseInt(args[2]);
    String sql = args[3];
    String reader = args.length > 4 ? args[4] : "getters";
    boolean getters = reader.equals("getters");
    BufferedReader requests = new BufferedReader(new InputStreamReader(System.in));
    try (Connection connection = DriverManager.getConnection(url); Statement statement = connection.createStatement()) {
      for (int run = 0; run < warmup + repeats; run++) {
        if (onRequest && run >= warmup && requests.readLine() == null) break;
        long start = System.nanoTime();
        long rows = 0;
        long sum = 0;
        long chars = 0;
        try (ResultSet rs = statement.executeQuery(sql)) {
          while (rs.next()) {
            sum += rs.getLong(1);
            if (getters) {
              rs.getDouble(2);
              rs.getTimestamp(3);
              chars += rs.getString(4).length();
            }
            rows++;
          }
        }
        print(run >= warmup, start, rows, sum, chars);
      }
    }
    System.exit(0);
  }

  static void print(boolean timed, long start, long rows, long sum, long chars) {
    double seconds = (System.nanoTime() - start) / 1e9;
    if (timed) {
      System.out.printf("{\"seconds\":%.6f,\"rows\":%d,\"sum\":%d,\"chars\":%d}%n", seconds, rows, sum, chars);
      System.out.flush();
    }
  }
}
