package dev.orrery.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Issue 11: timestamps through the JDBC driver 18.3.0. ResultSet.getObject(i) (what DBeaver and
 * most JVM tools call) works on every column type, timestamps included; time bounds bind from
 * setTimestamp and setObject and compare with nanosecond time columns.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TimestampTest {
  /** Five instants a second apart from 2024-01-01T00:00:00.000000001Z, as a TIMESTAMP_NS column. */
  private static final String FIVE_INSTANTS =
      "(SELECT make_timestamp_ns(1704067200000000001 + i * 1000000000) AS t FROM range(5) r(i))";

  private Connection conn;

  @BeforeAll
  void setUp() throws SQLException {
    conn = OrreryEnv.admin();
  }

  @AfterAll
  void tearDown() throws SQLException {
    if (conn != null) {
      conn.close();
    }
  }

  @Test
  void getObjectReadsEveryColumnType() throws SQLException {
    String sql =
        "SELECT 1::TINYINT AS tiny, 2::SMALLINT AS small, 3::INTEGER AS i, 4::BIGINT AS big,"
            + " 5::UBIGINT AS ubig, 1.5::FLOAT AS f, 2.5::DOUBLE AS d, 12.34::DECIMAL(10,2) AS dec,"
            + " 170141183460469231731687303715884105727::HUGEINT AS huge, 'text' AS s, 'ab'::BLOB AS b,"
            + " true AS yes, DATE '2024-01-02' AS day, TIME '03:04:05.123456' AS tod,"
            + " TIMESTAMP '2024-01-02 03:04:05.123456' AS ts, TIMESTAMPTZ '2024-01-02 03:04:05.123456+00' AS tstz,"
            + " make_timestamp_ns(1704164645123456789) AS tsns, now() AS now, INTERVAL '1 hour' AS iv,"
            + " uuid() AS id, [1, 2] AS list, {'a': 1} AS struct";
    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      assertTrue(rs.next());
      ResultSetMetaData md = rs.getMetaData();
      List<String> failures = new ArrayList<>();
      for (int i = 1; i <= md.getColumnCount(); i++) {
        try {
          Object value = rs.getObject(i);
          if (value == null) failures.add(md.getColumnName(i) + ": null");
          if (rs.getString(i) == null) failures.add(md.getColumnName(i) + ": getString null");
        } catch (SQLException | RuntimeException e) {
          failures.add(md.getColumnName(i) + " (" + md.getColumnTypeName(i) + "): " + e);
        }
      }
      assertEquals(List.of(), failures, "getObject/getString on every column");
      for (String name : List.of("ts", "tstz", "tsns", "now")) {
        assertInstanceOf(Timestamp.class, rs.getObject(name), name);
        assertEquals(Types.TIMESTAMP, md.getColumnType(rs.findColumn(name)), name);
        assertNotNull(rs.getTimestamp(name), name);
      }
      assertEquals(LocalDateTime.of(2024, 1, 2, 3, 4, 5, 123_456_789), rs.getObject("tsns", LocalDateTime.class));
      assertEquals(LocalDateTime.of(2024, 1, 2, 3, 4, 5, 123_456_000), rs.getObject("tstz", LocalDateTime.class));
      assertEquals("2024-01-02 03:04:05.123456789", rs.getString("tsns").replace('T', ' '));
    }
  }

  @Test
  void viewTimeColumnsReadWithGetObject() throws SQLException {
    try (Statement st = conn.createStatement();
        ResultSet rs = st.executeQuery("SELECT time, insert_time FROM log_entries LIMIT 0")) {
      ResultSetMetaData md = rs.getMetaData();
      assertEquals(Types.TIMESTAMP, md.getColumnType(1));
      assertEquals(Types.TIMESTAMP, md.getColumnType(2));
    }
  }

  private long countWhere(String condition, Object... parameters) throws SQLException {
    try (PreparedStatement ps =
        conn.prepareStatement("SELECT count(*) FROM " + FIVE_INSTANTS + " WHERE " + condition)) {
      for (int i = 0; i < parameters.length; i++) {
        if (parameters[i] instanceof Timestamp ts) ps.setTimestamp(i + 1, ts);
        else ps.setObject(i + 1, parameters[i]);
      }
      try (ResultSet rs = ps.executeQuery()) {
        assertTrue(rs.next());
        return rs.getLong(1);
      }
    }
  }

  @Test
  void timeBoundsWrittenInSql() throws SQLException {
    assertEquals(3, countWhere("t >= TIMESTAMPTZ '2024-01-01 00:00:02Z'"));
    assertEquals(3, countWhere("t >= TIMESTAMPTZ '2024-01-01 02:00:02.000000001+02:00'"));
    assertEquals(2, countWhere("t >= TIMESTAMPTZ '2024-01-01 00:00:02.000000002Z'"));
    assertEquals(5, countWhere("t >= now() - INTERVAL '100 years'"));
    assertEquals(0, countWhere("t >= now() - INTERVAL '1 hour'"));
    assertEquals(3, countWhere("t >= to_timestamp(1704067202)"));
  }

  @Test
  void timeBoundsFromSetTimestamp() throws SQLException {
    // The driver writes java.sql.Timestamp as milliseconds of the JVM's wall clock (run in UTC).
    assertEquals(3, countWhere("t >= ?", Timestamp.from(Instant.parse("2024-01-01T00:00:02Z"))));
    assertEquals(2, countWhere("t >= ?", Timestamp.from(Instant.parse("2024-01-01T00:00:02.001Z"))));
    assertEquals(
        2,
        countWhere(
            "t BETWEEN ? AND ?",
            Timestamp.from(Instant.parse("2024-01-01T00:00:01Z")),
            Timestamp.from(Instant.parse("2024-01-01T00:00:03Z"))));
  }

  @Test
  void timeBoundsFromSetObject() throws SQLException {
    OffsetDateTime bound = OffsetDateTime.of(2024, 1, 1, 2, 0, 2, 0, ZoneOffset.ofHours(2));
    // A text bound goes through a text parameter (the driver refuses a String for a timestamp one).
    assertEquals(3, countWhere("t >= CAST(CAST(? AS VARCHAR) AS TIMESTAMPTZ)", bound.toString()));
    assertEquals(3, countWhere("t >= ?", Timestamp.from(bound.toInstant())));
    // Driver 18.3.0: AvaticaParameterBinder has no converter for java.time objects (Rep.OBJECT),
    // whatever the parameter's Arrow type: "Binding value of type OBJECT is not yet supported".
    try {
      assertEquals(3, countWhere("t >= ?", bound));
    } catch (SQLException e) {
      Assumptions.assumeFalse(
          String.valueOf(e.getMessage()).contains("Binding value of type OBJECT is not yet supported"),
          "driver limitation: setObject(OffsetDateTime) is refused by the driver itself: " + e.getMessage());
      throw e;
    }
  }
}
