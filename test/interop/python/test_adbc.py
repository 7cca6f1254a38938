"""ADBC Flight SQL driver (DB-API facade) against Orrery."""

from __future__ import annotations

import calendar
import datetime as dt
import uuid
import warnings

import adbc_driver_flightsql.dbapi as flightsql
import pyarrow as pa
import pytest
from adbc_driver_manager import AdbcStatusCode

from flight_helpers import adbc_db_kwargs

PY_TYPES_SCHEMA = pa.schema(
    [
        pa.field("id", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("score", pa.float64()),
        pa.field("flag", pa.bool_()),
        pa.field("ts", pa.timestamp("ns", tz="UTC")),
    ]
)


def epoch_ns(y, mo, d, h=0, mi=0, s=0, us=0) -> int:
    return calendar.timegm(dt.datetime(y, mo, d, h, mi, s).utctimetuple()) * 1_000_000_000 + us * 1_000


PY_TYPES_ROWS = {
    "id": [1, 2, 3],
    "name": ["alpha", "beta", "gämma"],
    "score": [1.5, None, -3.25],
    "flag": [True, False, None],
    "ts": [epoch_ns(2024, 1, 1), None, epoch_ns(2024, 6, 30, 12, 34, 56, 789000)],
}


def connect_basic(orrery, user: str, key: str):
    return flightsql.connect(
        orrery.uri,
        db_kwargs=adbc_db_kwargs(username=user, password=key),
        autocommit=True,
    )


def as_pydict_with_epoch_ts(table: pa.Table) -> dict:
    """to_pydict, with timestamp columns as integer epoch values in their own unit."""
    columns = {}
    for field, column in zip(table.schema, table.columns):
        if pa.types.is_timestamp(field.type):
            column = column.cast(pa.int64())
        columns[field.name] = column.to_pylist()
    return columns


@pytest.fixture(scope="module")
def admin_conn(orrery):
    conn = connect_basic(orrery, orrery.admin_user, orrery.admin_key)
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def reader_conn(orrery):
    conn = connect_basic(orrery, orrery.reader_user, orrery.reader_key)
    yield conn
    conn.close()


@pytest.fixture(scope="module")
def py_types_table(admin_conn):
    """py_types, created by the admin through the DB-API (prepared statement path)."""
    with admin_conn.cursor() as cur:
        cur.execute(
            "CREATE OR REPLACE TABLE py_types "
            "(id BIGINT, name VARCHAR, score DOUBLE, flag BOOLEAN, ts TIMESTAMPTZ)"
        )
        cur.execute(
            "INSERT INTO py_types VALUES "
            "(1, 'alpha', 1.5, true, TIMESTAMPTZ '2024-01-01 00:00:00+00'), "
            "(2, 'beta', NULL, false, NULL), "
            "(3, 'gämma', -3.25, NULL, TIMESTAMPTZ '2024-06-30 12:34:56.789+00')"
        )
    admin_conn.commit()
    return "py_types"


def test_select_several_types(reader_conn):
    with reader_conn.cursor() as cur:
        cur.execute(
            "SELECT 42::BIGINT AS i, 2.5::DOUBLE AS d, 'héllo' AS s, "
            "TIMESTAMPTZ '2024-01-02 03:04:05.123456+00' AS ts, true AS b, NULL AS n"
        )
        table = cur.fetch_arrow_table()

    expected_schema = pa.schema(
        [
            pa.field("i", pa.int64()),
            pa.field("d", pa.float64()),
            pa.field("s", pa.string()),
            pa.field("ts", pa.timestamp("ns", tz="UTC")),
            pa.field("b", pa.bool_()),
            # DuckDB itself types an untyped NULL literal column as INTEGER
            # (DESCRIBE SELECT NULL AS n says INTEGER), so int32, not null.
            pa.field("n", pa.int32()),
        ]
    )
    assert table.schema.equals(expected_schema), f"got schema:\n{table.schema}"
    assert table.num_rows == 1
    assert as_pydict_with_epoch_ts(table) == {
        "i": [42],
        "d": [2.5],
        "s": ["héllo"],
        "ts": [epoch_ns(2024, 1, 2, 3, 4, 5, 123456)],
        "b": [True],
        "n": [None],
    }


def test_description_names_columns(reader_conn):
    with reader_conn.cursor() as cur:
        cur.execute("SELECT 1::INTEGER AS one, 'x' AS two")
        assert [d[0] for d in cur.description] == ["one", "two"]
        assert cur.fetchall() == [(1, "x")]


def test_prepared_statement_with_bound_parameter(reader_conn):
    with reader_conn.cursor() as cur:
        cur.execute("SELECT ? + 1 AS x", parameters=(41,))
        table = cur.fetch_arrow_table()
        assert table.column_names == ["x"]
        assert pa.types.is_integer(table.schema.field("x").type), table.schema
        assert table.column("x").to_pylist() == [42]

        # Same statement text again: the driver re-binds the cached prepared statement.
        cur.execute("SELECT ? + 1 AS x", parameters=(99,))
        assert cur.fetchall() == [(100,)]


def test_prepared_statement_with_string_and_float_parameters(reader_conn):
    with reader_conn.cursor() as cur:
        cur.execute("SELECT CAST(? AS VARCHAR) || '!' AS s, CAST(? AS DOUBLE) * 2 AS f", parameters=("hi", 1.25))
        assert cur.fetchall() == [("hi!", 2.5)]


def test_admin_creates_and_reader_reads(py_types_table, reader_conn):
    with reader_conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {py_types_table} ORDER BY id")
        table = cur.fetch_arrow_table()
    assert table.schema.equals(PY_TYPES_SCHEMA), f"got schema:\n{table.schema}"
    assert as_pydict_with_epoch_ts(table) == PY_TYPES_ROWS


def test_admin_insert_with_executemany(admin_conn, reader_conn):
    with admin_conn.cursor() as cur:
        cur.execute("CREATE OR REPLACE TABLE py_params (id BIGINT, label VARCHAR)")
        cur.executemany("INSERT INTO py_params VALUES (?, ?)", [(1, "a"), (2, "b"), (3, None)])
    admin_conn.commit()
    with reader_conn.cursor() as cur:
        cur.execute("SELECT id, label FROM py_params ORDER BY id")
        assert cur.fetchall() == [(1, "a"), (2, "b"), (3, None)]


def test_get_objects_finds_table_and_columns(py_types_table, admin_conn):
    objects = admin_conn.adbc_get_objects(
        depth="all", catalog_filter="orrery", db_schema_filter="main", table_name_filter=py_types_table
    ).read_all().to_pylist()

    assert [c["catalog_name"] for c in objects] == ["orrery"]
    schemas = objects[0]["catalog_db_schemas"]
    assert [s["db_schema_name"] for s in schemas] == ["main"]
    tables = schemas[0]["db_schema_tables"]
    assert [t["table_name"] for t in tables] == ["py_types"]
    table = tables[0]
    assert table["table_type"] == "TABLE"
    assert "TABLE" in admin_conn.adbc_get_table_types()
    columns = table["table_columns"]
    assert [(c["column_name"], c["ordinal_position"]) for c in columns] == [
        ("id", 1),
        ("name", 2),
        ("score", 3),
        ("flag", 4),
        ("ts", 5),
    ]


def test_get_objects_lists_catalog_and_schema(admin_conn):
    catalogs = admin_conn.adbc_get_objects(depth="catalogs").read_all().to_pylist()
    assert "orrery" in [c["catalog_name"] for c in catalogs]

    schemas = admin_conn.adbc_get_objects(depth="db_schemas", catalog_filter="orrery").read_all().to_pylist()
    assert [c["catalog_name"] for c in schemas] == ["orrery"]
    assert "main" in [s["db_schema_name"] for s in schemas[0]["catalog_db_schemas"]]


def test_get_table_schema(py_types_table, admin_conn):
    schema = admin_conn.adbc_get_table_schema(py_types_table, catalog_filter="orrery", db_schema_filter="main")
    assert schema.equals(PY_TYPES_SCHEMA), f"got schema:\n{schema}"
    assert admin_conn.adbc_get_table_schema(py_types_table).equals(PY_TYPES_SCHEMA)


def test_missing_table_error_names_the_table(reader_conn):
    # A reader is told the relation is unknown to it in the same words whether or not it exists
    # (issue 9: a missing relation and another catalog's relation must not be told apart).
    with reader_conn.cursor() as cur:
        with pytest.raises(flightsql.ProgrammingError) as excinfo:
            cur.execute("SELECT * FROM py_no_such_table")
    assert excinfo.value.status_code == AdbcStatusCode.UNAUTHORIZED, str(excinfo.value)
    assert "relation 'py_no_such_table' does not exist or is not available to this key" in str(excinfo.value)


def test_reader_create_table_is_permission_denied(admin_conn, reader_conn):
    table = f"py_reader_forbidden_{uuid.uuid4().hex[:12]}"
    with reader_conn.cursor() as cur:
        with pytest.raises(flightsql.Error) as excinfo:
            cur.execute(f"CREATE OR REPLACE TABLE {table} (x INTEGER)")
    assert excinfo.value.status_code == AdbcStatusCode.UNAUTHORIZED, str(excinfo.value)
    assert "permission" in str(excinfo.value).lower()

    with admin_conn.cursor() as cur:
        cur.execute(f"SELECT count(*) AS n FROM information_schema.tables WHERE table_name = '{table}'")
        assert cur.fetchall() == [(0,)]


def test_reader_insert_is_permission_denied(py_types_table, reader_conn):
    with reader_conn.cursor() as cur:
        with pytest.raises(flightsql.Error) as excinfo:
            cur.execute(f"INSERT INTO {py_types_table} VALUES (4, 'delta', 0.0, true, NULL)")
        assert excinfo.value.status_code == AdbcStatusCode.UNAUTHORIZED, str(excinfo.value)
        cur.execute(f"SELECT count(*) FROM {py_types_table}")
        assert cur.fetchall() == [(3,)]


def test_bearer_key_header_without_handshake(orrery):
    conn = flightsql.connect(
        orrery.uri,
        db_kwargs=adbc_db_kwargs(**{"adbc.flight.sql.authorization_header": f"Bearer {orrery.reader_key}"}),
        autocommit=True,
    )
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 'ok' AS status")
            assert cur.fetchall() == [("ok",)]
    finally:
        conn.close()


def test_default_connect_options(orrery):
    # What a plain `connect(uri, db_kwargs=...)` does: autocommit=False, which the
    # driver can only honour if the server reports transaction support; either
    # way queries must work.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", flightsql.Warning)
        conn = flightsql.connect(
            orrery.uri, db_kwargs={"username": orrery.reader_user, "password": orrery.reader_key}
        )
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 'plain' AS how")
            assert cur.fetchall() == [("plain",)]
    finally:
        conn.close()


def test_bad_password_is_unauthenticated(orrery):
    with pytest.raises(flightsql.Error) as excinfo:
        conn = connect_basic(orrery, orrery.admin_user, "not-the-key")
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT 1")
        finally:
            conn.close()
    assert excinfo.value.status_code == AdbcStatusCode.UNAUTHENTICATED, str(excinfo.value)


def test_cancel_stops_a_running_statement(orrery):
    """Issue 10: cursor.adbc_cancel() from another thread stops a statement Orrery is running."""
    import threading
    import time

    conn = connect_basic(orrery, orrery.reader_user, orrery.reader_key)
    outcome: list[BaseException | None] = []
    try:
        cur = conn.cursor()

        def run() -> None:
            try:
                cur.execute("SELECT count(*) FROM range(100000000) a, range(100000000) b WHERE a.range + b.range < 0")
                cur.fetchall()
                outcome.append(None)
            except BaseException as error:  # noqa: BLE001 - inspected below
                outcome.append(error)

        worker = threading.Thread(target=run)
        worker.start()
        # The cancel may land before the statement reaches the server: repeat it until the call ends.
        for _ in range(150):
            worker.join(0.2)
            if not worker.is_alive():
                break
            cur.adbc_cancel()
        worker.join(5)
        assert not worker.is_alive(), "the statement was still running after 30 s of cancels"
        assert outcome and isinstance(outcome[0], flightsql.Error), outcome
        assert outcome[0].status_code == AdbcStatusCode.CANCELLED, str(outcome[0])
        with conn.cursor() as again:
            again.execute("SELECT 41 + 1 AS n")
            assert again.fetchall() == [(42,)]
    finally:
        conn.close()


def test_session_options_catalog_and_schema(orrery):
    """Issue 10: ADBC's catalog and schema options go through Flight sessions (cookie middleware on)."""
    conn = flightsql.connect(
        orrery.uri,
        db_kwargs=adbc_db_kwargs(
            username=orrery.reader_user,
            password=orrery.reader_key,
            **{"adbc.flight.sql.rpc.with_cookie_middleware": "true"},
        ),
        autocommit=True,
    )
    try:
        session = conn.adbc_connection
        assert session.get_option("adbc.connection.catalog") == "orrery"
        assert session.get_option("adbc.connection.db_schema") == "main"
        session.set_options(**{"adbc.connection.catalog": "orrery", "adbc.connection.db_schema": "main"})
        assert session.get_option("adbc.connection.catalog") == "orrery"
        with pytest.raises(flightsql.ProgrammingError) as excinfo:
            session.set_options(**{"adbc.connection.catalog": "elsewhere"})
        assert "invalid value" in str(excinfo.value)
        with conn.cursor() as cur:
            cur.execute("SELECT 1 AS one")
            assert cur.fetchall() == [(1,)]
    finally:
        conn.close()
