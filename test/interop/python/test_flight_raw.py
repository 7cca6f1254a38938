"""Raw Arrow Flight (pyarrow.flight) against Orrery: no Flight SQL client library."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.flight as flight
import pytest

from flight_helpers import call_options, command_statement_query, flight_client, length_delimited, varint

THREE_ROWS_SQL = "SELECT * FROM (VALUES (1, 'one'), (2, 'two'), (3, 'three')) AS t(id, name) ORDER BY id"
THREE_ROWS_SCHEMA = pa.schema([pa.field("id", pa.int32()), pa.field("name", pa.string())])
THREE_ROWS = {"id": [1, 2, 3], "name": ["one", "two", "three"]}


@pytest.fixture(scope="module")
def client(orrery):
    c = flight_client(orrery)
    yield c
    c.close()


@pytest.fixture(scope="module")
def admin_auth(orrery, client):
    return client.authenticate_basic_token(orrery.admin_user, orrery.admin_key, call_options())


@pytest.fixture(scope="module")
def reader_auth(orrery, client):
    return client.authenticate_basic_token(orrery.reader_user, orrery.reader_key, call_options())


def test_hand_encoded_protobuf_bytes():
    # Guards the hand encoder itself (no generated code): known wire bytes.
    assert varint(0) == b"\x00"
    assert varint(300) == b"\xac\x02"
    assert length_delimited(1, b"SELECT 1") == b"\x0a\x08SELECT 1"
    assert command_statement_query("SELECT 1") == (
        b"\x0a\x43type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery"
        b"\x12\x0a\x0a\x08SELECT 1"
    )


def test_basic_handshake_returns_bearer_header(admin_auth, reader_auth):
    for name, value in (admin_auth, reader_auth):
        assert name.lower() == b"authorization"
        assert value.startswith(b"Bearer ")
        assert len(value) > len(b"Bearer ")


def test_do_get_with_raw_sql_ticket(client, admin_auth):
    table = client.do_get(flight.Ticket(THREE_ROWS_SQL.encode()), call_options(admin_auth)).read_all()
    assert table.schema.equals(THREE_ROWS_SCHEMA)
    assert table.num_rows == 3
    assert table.to_pydict() == THREE_ROWS


def test_command_statement_query_descriptor(client, reader_auth):
    options = call_options(reader_auth)
    descriptor = flight.FlightDescriptor.for_command(command_statement_query(THREE_ROWS_SQL))
    info = client.get_flight_info(descriptor, options)

    assert len(info.endpoints) == 1
    endpoint = info.endpoints[0]
    table = client.do_get(endpoint.ticket, options).read_all()

    assert info.schema.equals(table.schema)
    assert table.schema.equals(THREE_ROWS_SCHEMA)
    assert table.to_pydict() == THREE_ROWS
    assert info.total_records in (-1, 3)


def test_get_schema_for_statement_query(client, reader_auth):
    descriptor = flight.FlightDescriptor.for_command(command_statement_query(THREE_ROWS_SQL))
    result = client.get_schema(descriptor, call_options(reader_auth))
    assert result.schema.equals(THREE_ROWS_SCHEMA)


def test_bearer_api_key_without_handshake(orrery, client):
    header = (b"authorization", b"Bearer " + orrery.reader_key.encode())
    table = client.do_get(flight.Ticket(b"SELECT 7::BIGINT AS seven"), call_options(header)).read_all()
    assert table.schema.equals(pa.schema([pa.field("seven", pa.int64())]))
    assert table.to_pydict() == {"seven": [7]}


def test_bad_password_is_unauthenticated(orrery, client):
    with pytest.raises(flight.FlightUnauthenticatedError):
        client.authenticate_basic_token(orrery.admin_user, "not-the-key", call_options())


def test_unknown_user_is_unauthenticated(orrery, client):
    with pytest.raises(flight.FlightUnauthenticatedError):
        client.authenticate_basic_token("nobody", orrery.admin_key, call_options())


def test_missing_credentials_are_unauthenticated(client):
    with pytest.raises(flight.FlightUnauthenticatedError):
        client.do_get(flight.Ticket(b"SELECT 1"), call_options()).read_all()


def test_bad_bearer_token_is_unauthenticated(client):
    with pytest.raises(flight.FlightUnauthenticatedError):
        client.do_get(flight.Ticket(b"SELECT 1"), call_options((b"authorization", b"Bearer nope"))).read_all()


def test_sql_error_is_invalid_argument_with_engine_message(client, admin_auth):
    # gRPC INVALID_ARGUMENT surfaces in pyarrow as ArrowInvalid.
    with pytest.raises(pa.ArrowInvalid, match="py_raw_no_such_table"):
        client.do_get(flight.Ticket(b"SELECT * FROM py_raw_no_such_table"), call_options(admin_auth)).read_all()


def test_admin_ddl_through_raw_ticket_then_read(client, admin_auth, reader_auth):
    admin = call_options(admin_auth)
    client.do_get(flight.Ticket(b"CREATE OR REPLACE TABLE py_raw (k BIGINT, v VARCHAR)"), admin).read_all()
    client.do_get(flight.Ticket(b"INSERT INTO py_raw VALUES (1, 'x'), (2, NULL)"), admin).read_all()

    descriptor = flight.FlightDescriptor.for_command(command_statement_query("SELECT k, v FROM py_raw ORDER BY k"))
    reader = call_options(reader_auth)
    info = client.get_flight_info(descriptor, reader)
    assert len(info.endpoints) == 1
    table = client.do_get(info.endpoints[0].ticket, reader).read_all()
    assert info.schema.equals(table.schema)
    assert table.schema.equals(pa.schema([pa.field("k", pa.int64()), pa.field("v", pa.string())]))
    assert table.to_pydict() == {"k": [1, 2], "v": ["x", None]}


def test_reader_ddl_is_permission_denied(client, reader_auth):
    # gRPC PERMISSION_DENIED surfaces in pyarrow as FlightUnauthorizedError.
    with pytest.raises(flight.FlightUnauthorizedError):
        client.do_get(flight.Ticket(b"CREATE OR REPLACE TABLE py_raw_forbidden (x INTEGER)"),
                      call_options(reader_auth)).read_all()
    descriptor = flight.FlightDescriptor.for_command(command_statement_query("DROP TABLE IF EXISTS py_raw"))
    with pytest.raises(flight.FlightUnauthorizedError):
        info = client.get_flight_info(descriptor, call_options(reader_auth))
        client.do_get(info.endpoints[0].ticket, call_options(reader_auth)).read_all()
