package dev.orrery.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Statements and prepared statements. The driver runs every statement through
 * CreatePreparedStatement, then either GetFlightInfo(CommandPreparedStatementQuery) + DoGet
 * (queries) or DoPut(CommandPreparedStatementUpdate) (updates), then ClosePreparedStatement.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class QueryTest {
  private static final Instant TS1 = Instant.parse("2024-01-02T03:04:05.123456Z");
  private static final Instant TS2 = Instant.parse("2024-06-30T23:59:59Z");

  private Connection conn;

  /**
   * Timestamps reach this driver (18.3.0) without a zone, in UTC: its getObject(i) cannot read
   * zoned ones (issue 11), and without a zone getObject(i, Instant.class) is refused.
   */
  private static Instant utc(LocalDateTime time) {
    return time == null ? null : time.toInstant(ZoneOffset.UTC);
  }

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
  void statementQueryResultSetMetaData() throws SQLException {
    OrreryEnv.ensureJavaT();
    try (Statement st = conn.createStatement();
        ResultSet rs = st.executeQuery("SELECT id, name, score, ts, flag FROM java_t ORDER BY id")) {
      ResultSetMetaData md = rs.getMetaData();
      assertEquals(5, md.getColumnCount());
      List<String> names = new ArrayList<>();
      List<Integer> types = new ArrayList<>();
      for (int i = 1; i <= 5; i++) {
        names.add(md.getColumnName(i));
        types.add(md.getColumnType(i));
      }
      assertEquals(List.of("id", "name", "score", "ts", "flag"), names, "column names");
      assertEquals(
          List.of(
              Types.BIGINT,
              Types.VARCHAR,
              Types.DOUBLE,
              Types.TIMESTAMP,
              Types.BOOLEAN),
          types,
          "column java.sql.Types (from the Arrow schema of the result)");
    }
  }

  @Test
  void statementQueryExactValues() throws SQLException {
    OrreryEnv.ensureJavaT();
    try (Statement st = conn.createStatement();
        ResultSet rs = st.executeQuery("SELECT id, name, score, ts, flag FROM java_t ORDER BY id")) {
      assertTrue(rs.next(), "row 1 missing");
      assertEquals(1L, rs.getLong("id"));
      assertEquals("alpha", rs.getString("name"));
      assertEquals(1.5d, rs.getDouble("score"), 0.0);
      assertEquals(TS1, utc(rs.getObject("ts", LocalDateTime.class)));
      assertEquals(TS1, rs.getTimestamp("ts").toInstant());
      assertTrue(rs.getBoolean("flag"));
      assertFalse(rs.wasNull());

      assertTrue(rs.next(), "row 2 missing");
      assertEquals(2L, rs.getLong(1));
      assertEquals("beta", rs.getString(2));
      assertEquals(-2.25d, rs.getDouble(3), 0.0);
      assertEquals(TS2, utc(rs.getObject(4, LocalDateTime.class)));
      assertFalse(rs.getBoolean(5));
      assertFalse(rs.wasNull(), "false boolean reported as SQL NULL");

      assertTrue(rs.next(), "row 3 missing");
      assertEquals(3L, rs.getLong(1));
      assertNull(rs.getString(2));
      assertTrue(rs.wasNull());
      rs.getDouble(3);
      assertTrue(rs.wasNull(), "score of row 3 should be NULL");
      assertNull(utc(rs.getObject(4, LocalDateTime.class)));
      rs.getBoolean(5);
      assertTrue(rs.wasNull(), "flag of row 3 should be NULL");

      assertFalse(rs.next(), "more than 3 rows");
    }
  }

  @Test
  void statementQueryOfLiterals() throws SQLException {
    try (Statement st = conn.createStatement();
        ResultSet rs =
            st.executeQuery(
                "SELECT CAST(9007199254740993 AS BIGINT) AS big, CAST(0.1 AS DOUBLE) AS d, "
                    + "'héllo ✓' AS s, TIMESTAMPTZ '1970-01-01 00:00:00+00' AS epoch, "
                    + "true AS yes")) {
      assertTrue(rs.next());
      assertEquals(9007199254740993L, rs.getLong("big"));
      assertEquals(0.1d, rs.getDouble("d"), 0.0);
      assertEquals("héllo ✓", rs.getString("s"));
      assertEquals(Instant.EPOCH, utc(rs.getObject("epoch", LocalDateTime.class)));
      assertTrue(rs.getBoolean("yes"));
      assertFalse(rs.next());
    }
  }

  @Test
  void emptyResultKeepsSchema() throws SQLException {
    OrreryEnv.ensureJavaT();
    try (Statement st = conn.createStatement();
        ResultSet rs = st.executeQuery("SELECT id, name FROM java_t WHERE id < 0")) {
      assertFalse(rs.next(), "expected no rows");
      ResultSetMetaData md = rs.getMetaData();
      List<String> names = new ArrayList<>();
      for (int i = 1; i <= md.getColumnCount(); i++) {
        names.add(md.getColumnName(i));
      }
      // Driver bug apache/arrow-java#44 (fixed upstream by PR #1135, after 18.3.0): when no
      // endpoint yields a non-empty batch, the statement's signature keeps the prepared
      // dataset_schema columns *and* the ones appended by executeFlightInfoQuery, so every
      // column shows up twice. No server response avoids it (zero-row batches are skipped too);
      // FlightSqlClientTest checks the server's schemas for this query directly.
      Assumptions.assumeFalse(
          names.equals(List.of("id", "name", "id", "name")),
          "driver bug apache/arrow-java#44: empty result reports columns twice " + names);
      assertEquals(List.of("id", "name"), names, "columns of an empty result");
    }
  }

  @Test
  void preparedStatementWithSetLong() throws SQLException {
    OrreryEnv.ensureJavaT();
    try (PreparedStatement ps = conn.prepareStatement("SELECT * FROM java_t WHERE id = ?")) {
      assertEquals(1, ps.getParameterMetaData().getParameterCount(), "parameter count");

      ps.setLong(1, 2L);
      try (ResultSet rs = ps.executeQuery()) {
        assertEquals(5, rs.getMetaData().getColumnCount());
        assertTrue(rs.next(), "no row for id = 2");
        assertEquals(2L, rs.getLong("id"));
        assertEquals("beta", rs.getString("name"));
        assertEquals(-2.25d, rs.getDouble("score"), 0.0);
        assertEquals(TS2, utc(rs.getObject("ts", LocalDateTime.class)));
        assertFalse(rs.getBoolean("flag"));
        assertFalse(rs.next(), "more than one row for id = 2");
      }

      // Re-execute the same handle with a new binding.
      ps.setLong(1, 1L);
      try (ResultSet rs = ps.executeQuery()) {
        assertTrue(rs.next(), "no row for id = 1 on re-execution");
        assertEquals("alpha", rs.getString("name"));
        assertFalse(rs.next());
      }

      ps.setLong(1, 99L);
      try (ResultSet rs = ps.executeQuery()) {
        assertFalse(rs.next(), "row returned for id = 99");
      }
    }
  }

  @Test
  void executeUpdateInsertReturnsRowCount() throws SQLException {
    try (Statement st = conn.createStatement()) {
      st.execute("CREATE OR REPLACE TABLE java_ins (k BIGINT, v VARCHAR)");
      assertEquals(
          2, st.executeUpdate("INSERT INTO java_ins VALUES (1, 'one'), (2, 'two')"), "INSERT 2 rows");
      assertEquals(1, st.executeUpdate("INSERT INTO java_ins VALUES (3, 'three')"), "INSERT 1 row");
      assertEquals(
          0, st.executeUpdate("INSERT INTO java_ins SELECT * FROM java_ins WHERE k > 100"),
          "INSERT 0 rows");
      assertEquals(2, st.executeUpdate("DELETE FROM java_ins WHERE k <= 2"), "DELETE 2 rows");
      try (ResultSet rs = st.executeQuery("SELECT count(*) AS n, max(v) AS v FROM java_ins")) {
        assertTrue(rs.next());
        assertEquals(1L, rs.getLong("n"));
        assertEquals("three", rs.getString("v"));
      }
    }
  }

  @Test
  void preparedInsertWithParameters() throws SQLException {
    try (Statement st = conn.createStatement()) {
      st.execute("CREATE OR REPLACE TABLE java_pins (k BIGINT, v VARCHAR)");
    }
    try (PreparedStatement ps = conn.prepareStatement("INSERT INTO java_pins VALUES (?, ?)")) {
      ps.setLong(1, 7L);
      ps.setString(2, "seven");
      assertEquals(1, ps.executeUpdate(), "prepared INSERT row count");
    }
    try (Statement st = conn.createStatement();
        ResultSet rs = st.executeQuery("SELECT k, v FROM java_pins")) {
      assertTrue(rs.next());
      assertEquals(7L, rs.getLong(1));
      assertEquals("seven", rs.getString(2));
      assertFalse(rs.next());
    }
  }
}
