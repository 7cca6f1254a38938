package dev.orrery.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/** Handshake / authentication as seen through the JDBC driver. */
class ConnectionTest {

  @Test
  void adminConnectsAndRunsSelect1() throws SQLException {
    try (Connection c = OrreryEnv.admin()) {
      assertFalse(c.isClosed());
      try (Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT 1 AS one")) {
        assertTrue(rs.next(), "SELECT 1 returned no row");
        assertEquals(1, rs.getInt(1));
        assertEquals("one", rs.getMetaData().getColumnName(1));
        assertFalse(rs.next(), "SELECT 1 returned more than one row");
      }
    }
  }

  @Test
  void readerConnectsAndRunsSelect1() throws SQLException {
    try (Connection c = OrreryEnv.reader();
        Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT 41 + 1 AS answer")) {
      assertTrue(rs.next(), "SELECT 41 + 1 returned no row");
      assertEquals(42, rs.getInt("answer"));
      assertFalse(rs.next());
    }
  }

  /** The negative tests below mean nothing if the server cannot be reached at all. */
  private static void assertServerReachableWithRightKey() throws SQLException {
    try (Connection c = OrreryEnv.admin()) {
      assertFalse(c.isClosed(), "precondition: admin connection with the right key");
    }
  }

  @Test
  void wrongPasswordFailsToConnect() throws SQLException {
    assertServerReachableWithRightKey();
    SQLException e =
        assertThrows(
            SQLException.class,
            () -> {
              // Connecting alone must fail (the driver does a Handshake at connect); if the
              // server accepted the handshake, make sure a query is refused at the latest.
              try (Connection c = OrreryEnv.connect(OrreryEnv.ADMIN_USER, "not-the-key");
                  Statement st = c.createStatement();
                  ResultSet rs = st.executeQuery("SELECT 1")) {
                rs.next();
              }
            },
            "connecting with a wrong password succeeded");
    assertNotNull(e.getMessage());
    System.out.println("wrong password -> " + e);
  }

  @Test
  void wrongPasswordFailsAtConnectTime() throws SQLException {
    assertServerReachableWithRightKey();
    // Stricter than the test above: the failure must come from DriverManager.getConnection.
    assertThrows(
        SQLException.class,
        () -> OrreryEnv.connect(OrreryEnv.ADMIN_USER, "not-the-key").close(),
        "DriverManager.getConnection with a wrong password returned a connection");
  }

  @Test
  void unknownUserFailsAtConnectTime() throws SQLException {
    assertServerReachableWithRightKey();
    assertThrows(
        SQLException.class,
        () -> OrreryEnv.connect("nobody", OrreryEnv.ADMIN_KEY).close(),
        "DriverManager.getConnection with an unknown user returned a connection");
  }
}
