package dev.orrery.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.sql.Types;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.flight.CallOption;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightEndpoint;
import org.apache.arrow.flight.FlightInfo;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Location;
import org.apache.arrow.flight.grpc.CredentialCallOption;
import org.apache.arrow.flight.sql.FlightSqlClient;
import org.apache.arrow.flight.sql.FlightSqlProducer.Schemas;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * What the JDBC driver can't show, checked with the Java Flight SQL client (the library the
 * driver shades): GetXdbcTypeInfo, which the 18.3.0 driver's getTypeInfo() never sends, and the
 * schema of an empty result, which the driver's ResultSetMetaData garbles (apache/arrow-java#44).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class FlightSqlClientTest {
  private BufferAllocator allocator;
  private FlightClient client;
  private FlightSqlClient sql;
  private CallOption auth;

  @BeforeAll
  void setUp() {
    allocator = new RootAllocator();
    client =
        FlightClient.builder(
                allocator,
                Location.forGrpcInsecure(OrreryEnv.HOST, Integer.parseInt(OrreryEnv.requirePort())))
            .build();
    CredentialCallOption token =
        client
            .authenticateBasicToken(OrreryEnv.ADMIN_USER, OrreryEnv.ADMIN_KEY)
            .orElseThrow(() -> new AssertionError("Handshake returned no bearer token"));
    auth = token;
    sql = new FlightSqlClient(client);
  }

  @AfterAll
  void tearDown() throws Exception {
    if (client != null) {
      client.close();
    }
    if (allocator != null) {
      allocator.close();
    }
  }

  /** TYPE_NAME to DATA_TYPE for every row of every endpoint. */
  private Map<String, Integer> fetch(FlightInfo info) throws Exception {
    assertEquals(
        Schemas.GET_TYPE_INFO_SCHEMA.getFields().size(),
        info.getSchema().getFields().size(),
        "FlightInfo.schema field count, got " + info.getSchema());
    Map<String, Integer> rows = new LinkedHashMap<>();
    assertFalse(info.getEndpoints().isEmpty(), "FlightInfo has no endpoints");
    for (FlightEndpoint endpoint : info.getEndpoints()) {
      try (FlightStream stream = sql.getStream(endpoint.getTicket(), auth)) {
        while (stream.next()) {
          VectorSchemaRoot root = stream.getRoot();
          VarCharVector names = (VarCharVector) root.getVector("type_name");
          IntVector types = (IntVector) root.getVector("data_type");
          assertNotNull(names, "no type_name column in " + root.getSchema());
          assertNotNull(types, "no data_type column in " + root.getSchema());
          for (int i = 0; i < root.getRowCount(); i++) {
            rows.put(new String(names.get(i), StandardCharsets.UTF_8), types.get(i));
          }
        }
      }
    }
    return rows;
  }

  @Test
  void getXdbcTypeInfoReturnsRows() throws Exception {
    Map<String, Integer> rows = fetch(sql.getXdbcTypeInfo(auth));
    assertFalse(rows.isEmpty(), "GetXdbcTypeInfo returned no rows");
    assertEquals(Types.BIGINT, rows.get("BIGINT"), "DATA_TYPE of BIGINT; rows = " + rows);
    assertEquals(Types.VARCHAR, rows.get("VARCHAR"), "DATA_TYPE of VARCHAR; rows = " + rows);
    assertEquals(Types.DOUBLE, rows.get("DOUBLE"), "DATA_TYPE of DOUBLE; rows = " + rows);
    // Rows are ordered by data_type (spec: "ordered by DATA_TYPE and then by how closely the
    // data type maps to the corresponding JDBC SQL type").
    List<Integer> order = new ArrayList<>(rows.values());
    List<Integer> sorted = new ArrayList<>(order);
    sorted.sort(null);
    assertEquals(sorted, order, "GetXdbcTypeInfo rows not ordered by data_type: " + rows);
  }

  @Test
  void emptyQueryResultCarriesItsSchema() throws Exception {
    OrreryEnv.ensureJavaT();
    String query = "SELECT id, name FROM java_t WHERE id < 0";
    FlightSqlClient.PreparedStatement ps = sql.prepare(query, auth);
    try {
      assertEquals(
          List.of("id", "name"), fieldNames(ps.getResultSetSchema()), "prepared dataset_schema");
      FlightInfo info = ps.execute(auth);
      assertEquals(List.of("id", "name"), fieldNames(info.getSchema()), "FlightInfo.schema");
      long rows = 0;
      for (FlightEndpoint endpoint : info.getEndpoints()) {
        try (FlightStream stream = sql.getStream(endpoint.getTicket(), auth)) {
          assertEquals(
              List.of("id", "name"), fieldNames(stream.getSchema()), "DoGet stream schema");
          while (stream.next()) {
            rows += stream.getRoot().getRowCount();
          }
        }
      }
      assertEquals(0, rows, "rows of " + query);
    } finally {
      ps.close(auth); // plain close() would send ClosePreparedStatement without credentials
    }
  }

  private static List<String> fieldNames(org.apache.arrow.vector.types.pojo.Schema schema) {
    List<String> names = new ArrayList<>();
    schema.getFields().forEach(f -> names.add(f.getName()));
    return names;
  }

  @Test
  void getXdbcTypeInfoFilteredByDataType() throws Exception {
    Map<String, Integer> rows = fetch(sql.getXdbcTypeInfo(Types.BIGINT, auth));
    assertFalse(rows.isEmpty(), "GetXdbcTypeInfo(data_type=BIGINT) returned no rows");
    assertTrue(rows.containsKey("BIGINT"), "rows = " + rows);
    for (Map.Entry<String, Integer> e : rows.entrySet()) {
      assertEquals(Types.BIGINT, e.getValue(), "row " + e.getKey() + " in data_type=BIGINT filter");
    }
  }
}
