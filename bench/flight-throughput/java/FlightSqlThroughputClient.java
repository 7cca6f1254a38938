// The computed result of bench/flight-throughput read with the Java Flight SQL client, the code the
// Arrow Flight SQL JDBC driver runs under its cursor: Execute (GetFlightInfo), then DoGet, column 1
// summed per batch, no JDBC. Splits JDBC's time from the transport's (issue 10 item 3). Prints one
// JSON line per timed run, as ThroughputClient.java does, for bench.py to check.
//   java -cp <driver classpath> FlightSqlThroughputClient.java host:port warmup repeats sql key
// With `-` for repeats, each timed run starts when a line arrives on stdin, as in ThroughputClient.java.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import org.apache.arrow.flight.CallHeaders;
import org.apache.arrow.flight.FlightCallHeaders;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.HeaderCallOption;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.sql.FlightSqlClient;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;

public class FlightSqlThroughputClient {
  public static void main(String[] args) throws Exception {
    String[] address = args[0].split(":");
    int warmup = Integer.parseInt(args[1]);
    boolean onRequest = args[2].equals("-");
    int repeats = onRequest ? Integer.MAX_VALUE - warmup : Integer.parseInt(args[2]);
    String sql = args[3];
    BufferedReader requests = new BufferedReader(new InputStreamReader(System.in));
    CallHeaders headers = new FlightCallHeaders();
    headers.insert("authorization", "Bearer " + args[4]);
    HeaderCallOption auth = new HeaderCallOption(headers);
    try (BufferAllocator allocator = new RootAllocator();
        FlightClient client =
            FlightClient.builder(allocator, Location.forGrpcInsecure(address[0], Integer.parseInt(address[1]))).build()) {
      FlightSqlClient sqlClient = new FlightSqlClient(client);
      for (int run = 0; run < warmup + repeats; run++) {
        if (onRequest && run >= warmup && requests.readLine() == null) break;
        long start = System.nanoTime();
        long rows = 0;
        long sum = 0;
        FlightInfo info = sqlClient.execute(sql, auth);
        try (FlightStream stream = sqlClient.getStream(info.getEndpoints().get(0).getTicket(), auth)) {
          while (stream.next()) {
            VectorSchemaRoot root = stream.getRoot();
            BigIntVector first = (BigIntVector) root.getVector(0);
            for (int i = 0; i < root.getRowCount(); i++) sum += first.get(i);
            rows += root.getRowCount();
          }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        if (run >= warmup) {
          System.out.printf("{\"seconds\":%.6f,\"rows\":%d,\"sum\":%d}%n", seconds, rows, sum);
          System.out.flush();
        }
      }
    }
    System.exit(0);
  }
}
