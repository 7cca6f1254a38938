"""Issue 11: time bounds bound from Python datetimes (tz-aware and naive) and pyarrow
timestamps through ADBC compare with nanosecond time columns, and come back UTC-aware."""

from __future__ import annotations

import datetime as dt

import adbc_driver_flightsql.dbapi as flightsql
import pyarrow as pa
import pytest

from flight_helpers import adbc_db_kwargs

# Five instants a second apart from 2024-01-01T00:00:00.000000001Z, as a TIMESTAMP_NS column
# (the type of every view set's time columns).
FIVE_INSTANTS = "(SELECT make_timestamp_ns(1704067200000000001 + i * 1000000000) AS t FROM range(5) r(i))"
COUNT = f"SELECT count(*) FROM {FIVE_INSTANTS} WHERE t >= ?"


@pytest.fixture(scope="module")
def conn(orrery):
    c = flightsql.connect(
        orrery.uri,
        db_kwargs=adbc_db_kwargs(username=orrery.admin_user, password=orrery.admin_key),
        autocommit=True,
    )
    yield c
    c.close()


def count(conn, sql: str, parameters=None) -> int:
    with conn.cursor() as cur:
        cur.execute(sql, parameters)
        return cur.fetchone()[0]


UTC = dt.timezone.utc


@pytest.mark.parametrize(
    "bound",
    [
        dt.datetime(2024, 1, 1, 0, 0, 2, tzinfo=UTC),
        dt.datetime(2024, 1, 1, 2, 0, 2, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        dt.datetime(2023, 12, 31, 19, 0, 2, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
        dt.datetime(2024, 1, 1, 0, 0, 2),  # naive: UTC
        "2024-01-01T00:00:02Z",
    ],
    ids=["aware-utc", "aware-plus2", "aware-minus5", "naive", "text"],
)
def test_datetime_parameters(conn, bound):
    assert count(conn, COUNT, (bound,)) == 3


@pytest.mark.parametrize("tz", ["UTC", None, "+02:00"])
def test_nanosecond_arrow_parameters(conn, tz):
    def bound(nanos: int) -> pa.RecordBatch:
        return pa.record_batch([pa.array([nanos], pa.timestamp("ns", tz=tz))], names=["bound"])

    assert count(conn, COUNT, bound(1704067202000000001)) == 3
    assert count(conn, COUNT, bound(1704067202000000002)) == 2


@pytest.mark.parametrize(
    "condition",
    [
        "t >= TIMESTAMPTZ '2024-01-01 00:00:02Z'",
        "t >= TIMESTAMP '2024-01-01 00:00:02'",
        "t >= '2024-01-01T00:00:02.000000001Z'",
        "t >= to_timestamp(1704067202)",
        "t >= arrow_cast('2024-01-01T00:00:02Z', 'Timestamp(Nanosecond, Some(\"UTC\"))')",
    ],
)
def test_bounds_written_in_sql(conn, condition):
    assert count(conn, f"SELECT count(*) FROM {FIVE_INSTANTS} WHERE {condition}") == 3


def test_now_arithmetic(conn):
    assert count(conn, f"SELECT count(*) FROM {FIVE_INSTANTS} WHERE t >= now() - INTERVAL '1 hour'") == 0
    assert count(conn, f"SELECT count(*) FROM {FIVE_INSTANTS} WHERE t < current_timestamp - INTERVAL 1 DAY") == 5


def test_results_stay_utc_aware(conn):
    with conn.cursor() as cur:
        cur.execute("SELECT TIMESTAMPTZ '2024-01-01 02:00:00.123456789+02:00' AS a, now() AS b")
        table = cur.fetch_arrow_table()
    assert table.schema.field("a").type == pa.timestamp("ns", tz="UTC")
    assert table.schema.field("b").type == pa.timestamp("ns", tz="UTC")
    assert table.column("a").cast(pa.int64()).to_pylist() == [1704067200123456789]
