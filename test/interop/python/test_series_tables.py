"""Issue 12: series tables written with ADBC (adbc_ingest, executemany, transactions) and read back."""

from __future__ import annotations

import datetime as dt
import decimal
import re
import uuid

import adbc_driver_flightsql.dbapi as flightsql
import pyarrow as pa
import pytest

from flight_helpers import adbc_db_kwargs


def connect(orrery, user: str, key: str, autocommit: bool):
    return flightsql.connect(orrery.uri, db_kwargs=adbc_db_kwargs(username=user, password=key), autocommit=autocommit)


@pytest.fixture()
def table_name():
    return f"series_{uuid.uuid4().hex[:10]}"


def every_common_type() -> pa.Table:
    utc = dt.timezone.utc
    return pa.table(
        {
            "ts": pa.array([dt.datetime(2024, 5, 1, 10, 0, tzinfo=utc), dt.datetime(2024, 5, 1, 10, 1, 30, 250000, tzinfo=utc)], pa.timestamp("ns", "UTC")),
            "i8": pa.array([-8, 8], pa.int8()),
            "i16": pa.array([-16, None], pa.int16()),
            "i32": pa.array([-32, 32], pa.int32()),
            "i64": pa.array([-(2**62), 2**62], pa.int64()),
            "u32": pa.array([0, 2**32 - 1], pa.uint32()),
            "f32": pa.array([1.5, -2.25], pa.float32()),
            "f64": pa.array([3.141592653589793, None], pa.float64()),
            "flag": pa.array([True, False], pa.bool_()),
            "name": pa.array(["alpha", "gämma"], pa.string()),
            "blob": pa.array([b"\x00\x01", b""], pa.binary()),
            "day": pa.array([dt.date(2024, 5, 1), dt.date(1999, 12, 31)], pa.date32()),
            "at_us": pa.array([dt.datetime(2024, 5, 1, 12, 0, 0, 123456), None], pa.timestamp("us")),
            "amount": pa.array([decimal.Decimal("12.34"), decimal.Decimal("-0.01")], pa.decimal128(10, 2)),
        }
    )


def test_adbc_ingest_of_every_common_type_reads_back(orrery, table_name):
    data = every_common_type()
    with connect(orrery, orrery.admin_user, orrery.admin_key, autocommit=True) as conn, conn.cursor() as cur:
        assert cur.adbc_ingest(table_name, data, mode="create") == 2
        cur.execute(f"SELECT * EXCLUDE (audience) FROM {table_name} ORDER BY ts")
        back = cur.fetch_arrow_table()
    assert back.column_names == data.column_names
    for name in data.column_names:
        expected = data.column(name).to_pylist()
        got = back.column(name).to_pylist()
        if name == "f32":
            got = [pytest.approx(v) for v in got]
        if name == "at_us":  # Orrery sends every timestamp as timestamp[ns, UTC] (README, Types)
            got = [v.replace(tzinfo=None) if v else v for v in got]
        assert got == expected, name


def test_reader_appends_and_its_rows_carry_its_audience(orrery, table_name):
    with connect(orrery, orrery.admin_user, orrery.admin_key, autocommit=True) as admin, admin.cursor() as cur:
        cur.execute(f"CREATE TABLE {table_name} (ts TIMESTAMPTZ, host VARCHAR, cpu DOUBLE)")
    rows = pa.table({"ts": pa.array([1714557600000000000, 1714557660000000000], pa.timestamp("ns", "UTC")), "host": ["a", "b"], "cpu": [0.5, 0.75], "audience": ["secret", "secret"]})
    with connect(orrery, orrery.reader_user, orrery.reader_key, autocommit=True) as reader, reader.cursor() as cur:
        assert cur.adbc_ingest(table_name, rows, mode="append") == 2
        with pytest.raises(flightsql.Error):
            cur.adbc_ingest(table_name, rows, mode="replace")
        cur.execute(f"SELECT host, audience FROM {table_name} ORDER BY host")
        assert cur.fetchall() == [("a", "public"), ("b", "public")]


def test_executemany_and_a_mistyped_ingest(orrery, table_name):
    with connect(orrery, orrery.admin_user, orrery.admin_key, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table_name} (ts TIMESTAMP, host VARCHAR, cpu DOUBLE)")
        cur.executemany(f"INSERT INTO {table_name} (ts, host, cpu) VALUES (?, ?, ?)", [("2024-05-01 00:00:00", "a", 1.0), ("2024-05-01 00:01:00", "b", 2.0), ("2024-05-01 00:02:00", "c", 3.0)])
        cur.execute(f"SELECT count(*), sum(cpu) FROM {table_name}")
        assert cur.fetchall() == [(3, 6.0)]
        bad = pa.table({"ts": pa.array([0], pa.timestamp("us")), "cpu": ["not a number"]})
        with pytest.raises(flightsql.Error, match="column 'cpu'"):
            cur.adbc_ingest(table_name, bad, mode="append")
        cur.execute(f"SELECT count(*) FROM {table_name}")
        assert cur.fetchall() == [(3,)]


def test_transactions_commit_and_rollback(orrery, table_name):
    with connect(orrery, orrery.admin_user, orrery.admin_key, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table_name} (ts TIMESTAMP, n BIGINT)")
    with connect(orrery, orrery.admin_user, orrery.admin_key, autocommit=False) as tx, connect(orrery, orrery.reader_user, orrery.reader_key, autocommit=True) as other:
        with tx.cursor() as cur, other.cursor() as look:
            cur.execute(f"INSERT INTO {table_name} VALUES ('2024-01-01', 1)")
            cur.executemany(f"INSERT INTO {table_name} VALUES (?, ?)", [("2024-01-02", 2), ("2024-01-03", 3)])
            # (adbc_ingest is left out: ADBC's Flight SQL driver, 1.13.0, sends it through its client's
            # ExecuteIngest without the transaction id, go/adbc/driver/flightsql/flightsql_bulk_ingest.go,
            # so it commits at once; arrow-go clients that set ExecuteIngestOpts.TransactionId ingest
            # inside the transaction, test/interop/go/series_test.go.)
            look.execute(f"SELECT count(*) FROM {table_name}")
            assert look.fetchall() == [(0,)]
            tx.commit()
            look.execute(f"SELECT count(*) FROM {table_name}")
            assert look.fetchall() == [(3,)]
            cur.execute(f"DELETE FROM {table_name}")
            tx.rollback()
            look.execute(f"SELECT sum(n) FROM {table_name}")
            assert look.fetchall() == [(6,)]


@pytest.mark.parametrize(
    "bound",
    [
        dt.datetime(2024, 3, 7, 0, 0, tzinfo=dt.timezone.utc),
        dt.datetime(2024, 3, 7, 2, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        dt.datetime(2024, 3, 7, 0, 0),  # naive: UTC
        pa.record_batch([pa.array([1709769600000000000], pa.timestamp("ns", "UTC"))], names=["bound"]),
    ],
    ids=["aware-utc", "aware-plus2", "naive", "arrow-ns"],
)
def test_a_bound_timestamp_parameter_prunes_the_scan(orrery, table_name, bound):
    """#14/#10: `ts >= ?` with a timestamp bound by ADBC reads only the files of the days it keeps
    (each day's INSERT is a file; EXPLAIN ANALYZE counts the files DuckLake's scan read), with the
    rows of the plain string bound."""
    with connect(orrery, orrery.admin_user, orrery.admin_key, autocommit=True) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE TABLE {table_name} (ts TIMESTAMP, n BIGINT) WITH (time_column = 'ts')")
        for day in range(1, 9):
            cur.execute(
                f"INSERT INTO {table_name} SELECT TIMESTAMP '2024-03-0{day}' + to_microseconds(i * 17280000), i FROM range(5000) t(i)"
            )
        parameters = bound if isinstance(bound, pa.RecordBatch) else (bound,)
        cur.execute(f"EXPLAIN ANALYZE SELECT count(*) FROM {table_name} WHERE ts >= ?", parameters)
        plan = "\n".join(str(value) for row in cur.fetchall() for value in row)
        files = sum(int(m) for m in re.findall(r"Total Files Read: (\d+)", plan))
        assert files == 2, plan
        cur.execute(f"SELECT count(*) FROM {table_name} WHERE ts >= ?", parameters)
        assert cur.fetchone()[0] == 10000
        cur.execute(f"DROP TABLE {table_name}")
