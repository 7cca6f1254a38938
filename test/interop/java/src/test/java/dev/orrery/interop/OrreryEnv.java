package dev.orrery.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Connection settings for the Orrery server under test, read from the environment that
 * test/interop/run.sh sets up.
 */
final class OrreryEnv {
  static final String CATALOG = "orrery";
  static final String SCHEMA = "main";

  /** The shared fixture table (see {@link #createJavaT}). */
  static final String JAVA_T = "java_t";

  static final String HOST = env("ORRERY_FLIGHT_HOST", "127.0.0.1");
  static final String PORT = env("ORRERY_FLIGHT_PORT", null);
  static final String ADMIN_USER = env("ORRERY_ADMIN_USER", "admin");
  static final String ADMIN_KEY = env("ORRERY_ADMIN_KEY", "admin-key-0123");
  static final String READER_USER = env("ORRERY_READER_USER", "reader");
  static final String READER_KEY = env("ORRERY_READER_KEY", "reader-key-0123");

  private OrreryEnv() {}

  private static String env(String name, String fallback) {
    String v = System.getenv(name);
    return v == null || v.isEmpty() ? fallback : v;
  }

  static String requirePort() {
    if (PORT == null) {
      throw new IllegalStateException(
          "ORRERY_FLIGHT_PORT is not set: start an Orrery server and export ORRERY_FLIGHT_HOST/PORT");
    }
    return PORT;
  }

  static String url(String user, String password) {
    return "jdbc:arrow-flight-sql://" + HOST + ":" + requirePort() + "?useEncryption=false"
        + "&user=" + enc(user) + "&password=" + enc(password);
  }

  private static String enc(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  static Connection connect(String user, String password) throws SQLException {
    // The driver sends user/password in a Flight Handshake (basic auth) at connect time.
    return DriverManager.getConnection(url(user, password));
  }

  static Connection admin() throws SQLException {
    return connect(ADMIN_USER, ADMIN_KEY);
  }

  static Connection reader() throws SQLException {
    return connect(READER_USER, READER_KEY);
  }

  /**
   * (Re)creates orrery.main.java_t with three known rows:
   *
   * <pre>
   *  id | name  | score | ts                               | flag
   *   1 | alpha |  1.5  | 2024-01-02 03:04:05.123456+00:00 | true
   *   2 | beta  | -2.25 | 2024-06-30 23:59:59+00:00        | false
   *   3 | NULL  | NULL  | NULL                             | NULL
   * </pre>
   *
   * {@link #ensureJavaT} does this once per JVM (and remembers a failure, so that a server that
   * hangs on DoPut costs one timeout, not one per test).
   */
  static synchronized void ensureJavaT() throws SQLException {
    if (javaTFailure != null) {
      throw new SQLException("fixture table java_t could not be created earlier: " + javaTFailure, javaTFailure);
    }
    if (javaTReady) {
      return;
    }
    try (Connection admin = admin()) {
      createJavaT(admin);
      javaTReady = true;
    } catch (SQLException | RuntimeException | Error e) {
      javaTFailure = e;
      throw e;
    }
  }

  private static boolean javaTReady;
  private static Throwable javaTFailure;

  static void createJavaT(Connection admin) throws SQLException {
    try (Statement st = admin.createStatement()) {
      st.execute(
          "CREATE OR REPLACE TABLE java_t ("
              + "id BIGINT, name VARCHAR, score DOUBLE, ts TIMESTAMP WITH TIME ZONE, flag BOOLEAN)");
      int n =
          st.executeUpdate(
              "INSERT INTO java_t VALUES "
                  + "(1, 'alpha', 1.5, TIMESTAMPTZ '2024-01-02 03:04:05.123456+00', true), "
                  + "(2, 'beta', -2.25, TIMESTAMPTZ '2024-06-30 23:59:59+00', false), "
                  + "(3, NULL, NULL, NULL, NULL)");
      assertEquals(3, n, "executeUpdate(INSERT 3 rows into java_t) row count");
    }
  }
}
