package dev.orrery.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** Non-admin users may only read. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PermissionTest {
  private Connection admin;

  @BeforeAll
  void setUp() throws SQLException {
    admin = OrreryEnv.admin();
  }

  @AfterAll
  void tearDown() throws SQLException {
    if (admin != null) {
      admin.close();
    }
  }

  /** A fresh name per attempt, so a table left by an earlier (wrongly allowed) run can't interfere. */
  private static String deniedName() {
    return "java_denied_" + Long.toHexString(System.nanoTime());
  }

  private boolean tableExists(String name) throws SQLException {
    try (ResultSet rs = admin.getMetaData().getTables(OrreryEnv.CATALOG, OrreryEnv.SCHEMA, name, null)) {
      return rs.next();
    }
  }

  @Test
  void readerCreateTableIsRejected() throws SQLException {
    String name = deniedName();
    try (Connection reader = OrreryEnv.reader();
        Statement st = reader.createStatement()) {
      assertThrows(
          SQLException.class,
          () -> st.execute("CREATE TABLE " + name + " (x BIGINT)"),
          "reader was allowed to CREATE TABLE");
    }
    assertFalse(tableExists(name), name + " exists after a refused CREATE");
  }

  @Test
  void readerCreateTableViaExecuteUpdateIsRejected() throws SQLException {
    String name = deniedName();
    try (Connection reader = OrreryEnv.reader();
        Statement st = reader.createStatement()) {
      assertThrows(
          SQLException.class,
          () -> st.executeUpdate("CREATE TABLE " + name + " (x BIGINT)"),
          "reader was allowed to CREATE TABLE via executeUpdate");
    }
    assertFalse(tableExists(name), name + " exists after a refused CREATE");
  }

  @Test
  void readerInsertIsRejectedAndChangesNothing() throws SQLException {
    OrreryEnv.ensureJavaT();
    try (Connection reader = OrreryEnv.reader();
        Statement st = reader.createStatement()) {
      assertThrows(
          SQLException.class,
          () -> st.executeUpdate("INSERT INTO java_t VALUES (4, 'x', 0.0, NULL, NULL)"),
          "reader was allowed to INSERT");
    }
    try (Statement st = admin.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*) FROM java_t")) {
      assertTrue(rs.next());
      assertEquals(3L, rs.getLong(1), "java_t row count after refused INSERT");
    }
  }

  @Test
  void readerCanSelectJavaT() throws SQLException {
    OrreryEnv.ensureJavaT();
    try (Connection reader = OrreryEnv.reader();
        Statement st = reader.createStatement();
        ResultSet rs = st.executeQuery("SELECT name FROM java_t WHERE id = 1")) {
      assertTrue(rs.next(), "reader got no row from java_t");
      assertEquals("alpha", rs.getString(1));
      assertFalse(rs.next());
    }
  }
}
