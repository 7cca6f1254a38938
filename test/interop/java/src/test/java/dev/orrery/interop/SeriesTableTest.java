package dev.orrery.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** Issue 12: a series table written with JDBC: executeUpdate and batches. */
class SeriesTableTest {
  private static long count(Connection conn, String sql) throws SQLException {
    try (Statement st = conn.createStatement();
        ResultSet rs = st.executeQuery(sql)) {
      assertTrue(rs.next());
      return rs.getLong(1);
    }
  }

  @Test
  void executeUpdateAndBatches() throws SQLException {
    String table = "jdbc_" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);
    try (Connection admin = OrreryEnv.admin();
        Connection other = OrreryEnv.admin()) {
      try (Statement st = admin.createStatement()) {
        assertEquals(0, st.executeUpdate("CREATE TABLE " + table + " (ts TIMESTAMP, host VARCHAR, cpu DOUBLE)"));
        assertEquals(2, st.executeUpdate("INSERT INTO " + table + " VALUES ('2024-05-01 10:00:00', 'a', 0.5), ('2024-05-01 10:01:00', 'b', 0.25)"));
        assertEquals(1, st.executeUpdate("UPDATE " + table + " SET cpu = 1.5 WHERE host = 'a'"));
      }
      try (PreparedStatement ps = admin.prepareStatement("INSERT INTO " + table + " (ts, host, cpu) VALUES (?, ?, ?)")) {
        for (int i = 0; i < 3; i++) {
          ps.setTimestamp(1, java.sql.Timestamp.from(java.time.Instant.parse("2024-05-02T00:0" + i + ":00Z")));
          ps.setString(2, "batch-" + i);
          ps.setDouble(3, i);
          ps.addBatch();
        }
        // The driver sends the whole batch as one DoPut of bound rows and reports its total.
        int[] counts = ps.executeBatch();
        assertEquals(3, java.util.Arrays.stream(counts).sum());
      }
      assertEquals(5, count(other, "SELECT count(*) FROM " + table));

      // JDBC transactions do not reach the server: the Arrow Flight SQL JDBC driver's
      // ArrowFlightMetaImpl.commit() and rollback() are empty stubs (18.3.0, 19.0.0 and arrow-java's
      // main branch) and it never sends BeginTransaction or a transaction id, so with autocommit
      // off each statement still commits on its own and rollback() undoes nothing. Pinned here so
      // that a driver which starts sending transactions shows up (README, Series tables).
      admin.setAutoCommit(false);
      try (Statement st = admin.createStatement()) {
        assertEquals(3, st.executeUpdate("DELETE FROM " + table + " WHERE host LIKE 'batch-%'"));
      }
      assertEquals(2, count(other, "SELECT count(*) FROM " + table));
      admin.rollback();
      assertEquals(2, count(other, "SELECT count(*) FROM " + table));
      admin.setAutoCommit(true);
      try (Statement st = admin.createStatement()) {
        st.executeUpdate("DROP TABLE " + table);
      }
    }
  }
}
