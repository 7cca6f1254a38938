// A large result through a JDBC driver, read as JDBC tools read it: every row, every column by its
// typed getter (getLong, getDouble, getTimestamp, getString). Prints one JSON line per timed run:
// seconds, rows and sum(i), for bench/flight-throughput/bench.py to check. The same reader runs
// against Orrery (the Arrow Flight SQL JDBC driver) and in-process DuckDB (DuckDB's JDBC driver).
//   java -cp <driver classpath> ThroughputClient.java jdbc-url warmup repeats sql
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;

public class ThroughputClient {
  public static void main(String[] args) throws Exception {
    String url = args[0];
    int warmup = Integer.parseInt(args[1]);
    int repeats = Integer.parseInt(args[2]);
    String sql = args[3];
    try (Connection connection = DriverManager.getConnection(url); Statement statement = connection.createStatement()) {
      for (int run = 0; run < warmup + repeats; run++) {
        long start = System.nanoTime();
        long rows = 0;
        long sum = 0;
        long chars = 0;
        try (ResultSet rs = statement.executeQuery(sql)) {
          while (rs.next()) {
            sum += rs.getLong(1);
            rs.getDouble(2);
            rs.getTimestamp(3);
            chars += rs.getString(4).length();
            rows++;
          }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        if (run >= warmup)
          System.out.printf("{\"seconds\":%.6f,\"rows\":%d,\"sum\":%d,\"chars\":%d}%n", seconds, rows, sum, chars);
      }
    }
    System.exit(0);
  }
}
