"""A result far larger than one gRPC message streams completely."""

from __future__ import annotations

import adbc_driver_flightsql.dbapi as flightsql
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.flight as flight

from flight_helpers import adbc_db_kwargs, call_options, command_statement_query, flight_client

N = 1_000_000
SQL = f"SELECT range AS i FROM range({N})"
EXPECTED_SUM = N * (N - 1) // 2  # 499999500000


def check_range_column(table: pa.Table) -> None:
    assert table.schema.equals(pa.schema([pa.field("i", pa.int64())])), table.schema
    column = table.column("i")
    assert table.num_rows == N
    assert column.null_count == 0
    assert pc.sum(column).as_py() == EXPECTED_SUM
    assert pc.min_max(column).as_py() == {"min": 0, "max": N - 1}
    assert pc.count_distinct(column).as_py() == N


def test_large_result_through_adbc(orrery):
    conn = flightsql.connect(
        orrery.uri,
        db_kwargs=adbc_db_kwargs(username=orrery.reader_user, password=orrery.reader_key),
        autocommit=True,
    )
    try:
        with conn.cursor() as cur:
            cur.execute(SQL)
            check_range_column(cur.fetch_arrow_table())
    finally:
        conn.close()


def test_large_result_through_pyarrow_flight(orrery):
    client = flight_client(orrery)
    try:
        auth = client.authenticate_basic_token(orrery.reader_user, orrery.reader_key, call_options())
        options = call_options(auth)
        info = client.get_flight_info(flight.FlightDescriptor.for_command(command_statement_query(SQL)), options)
        assert len(info.endpoints) == 1
        reader = client.do_get(info.endpoints[0].ticket, options)
        batches = []
        for chunk in reader:
            batches.append(chunk.data)
        table = pa.Table.from_batches(batches, schema=reader.schema)
        assert info.schema.equals(table.schema)
        check_range_column(table)
        # 8 MB of int64 cannot fit one default-sized (4 MiB) gRPC message.
        assert len(batches) > 1
    finally:
        client.close()
