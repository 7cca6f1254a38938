// interleave.sh's statements through the Arrow Flight SQL JDBC driver (CLIENT=jdbc): one connection to each of two
// servers, Statement.executeQuery with every row read, one statement to each in turn (A B B A ...), so both meet the
// same load. Prints per side the p50 and p99 and the server process's CPU per statement, and B / A.
// Its statements run as LatencyClient.java's (LatencyClient.drain): compiled with it, as interleave.sh does,
//   javac -d <classes> InterleaveClient.java LatencyClient.java
//   java -cp <classes>:<driver classpath> InterleaveClient user key sql n warmup portA portB pidA pidB refA refB
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

public class InterleaveClient {
  /** The process's CPU (user + system) in seconds, from /proc/<pid>/stat (clock ticks of 1/100 s). */
  static double cpu(String pid) throws Exception {
    String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) / 100.0;
  }

  static double quantile(List<Double> sorted, double q) {
    return sorted.get((int) Math.round(q * (sorted.size() - 1)));
  }

  public static void main(String[] args) throws Exception {
    String user = args[0], key = args[1], sql = args[2];
    int n = Integer.parseInt(args[3]), warmup = Integer.parseInt(args[4]);
    String[] ports = {args[5], args[6]}, pids = {args[7], args[8]}, refs = {args[9], args[10]};
    Statement[] statements = new Statement[2];
    for (int side = 0; side < 2; side++) {
      Connection connection = DriverManager.getConnection(
          "jdbc:arrow-flight-sql://127.0.0.1:" + ports[side] + "?useEncryption=false&user=" + user + "&password=" + key);
      statements[side] = connection.createStatement();
    }
    // The JVM compiles the driver's paths over its first thousands of statements (PROFILE.md, s20).
    for (int i = 0; i < warmup; i++) LatencyClient.drain(statements[i % 2], sql);
    List<List<Double>> times = List.of(new ArrayList<>(), new ArrayList<>());
    double[] start = {cpu(pids[0]), cpu(pids[1])};
    for (int i = 0; i < 2 * n; i++) {
      // A B B A: neither side is always first after the other.
      int side = (i % 4 == 0 || i % 4 == 3) ? 0 : 1;
      long t0 = System.nanoTime();
      LatencyClient.drain(statements[side], sql);
      times.get(side).add((System.nanoTime() - t0) / 1e6);
    }
    double[] p50 = new double[2], serverCpu = new double[2];
    for (int side = 0; side < 2; side++) {
      List<Double> sorted = times.get(side);
      Collections.sort(sorted);
      p50[side] = quantile(sorted, 0.5);
      serverCpu[side] = (cpu(pids[side]) - start[side]) * 1000 / sorted.size();
      System.out.printf("%-12s jdbc p50 %.3f ms  p99 %.3f ms  server CPU %.3f ms/statement  (%d statements)%n",
          refs[side], p50[side], quantile(sorted, 0.99), serverCpu[side], sorted.size());
    }
    System.out.printf("B / A: p50 %.2f, server CPU %.2f%n", p50[1] / p50[0], serverCpu[1] / serverCpu[0]);
    // The driver's connections, never closed, keep the JVM running (as LatencyClient's do).
    System.exit(0);
  }
}
