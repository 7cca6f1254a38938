"""Small helpers shared by the tests: hand-made protobuf and client factories."""

from __future__ import annotations

import os

import pyarrow.flight as flight

SQL_TYPE_URL_PREFIX = "type.googleapis.com/arrow.flight.protocol.sql."

# Per-call deadline so that a server that never ends a stream fails the test
# instead of hanging the run.
CALL_TIMEOUT_S = float(os.environ.get("ORRERY_INTEROP_CALL_TIMEOUT", "60"))


def varint(n: int) -> bytes:
    """Protobuf base-128 varint of a non-negative integer."""
    if n < 0:
        raise ValueError("negative varint")
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def length_delimited(field_number: int, payload: bytes) -> bytes:
    """One wire-type-2 (length-delimited) field: key, length, bytes."""
    return varint((field_number << 3) | 2) + varint(len(payload)) + payload


def pack_any(message_name: str, value: bytes) -> bytes:
    """google.protobuf.Any{type_url = 1, value = 2} for a Flight SQL message."""
    return length_delimited(1, (SQL_TYPE_URL_PREFIX + message_name).encode()) + length_delimited(2, value)


def command_statement_query(sql: str) -> bytes:
    """Any-packed CommandStatementQuery{query = 1}, encoded by hand."""
    return pack_any("CommandStatementQuery", length_delimited(1, sql.encode("utf-8")))


def flight_client(orrery) -> flight.FlightClient:
    return flight.FlightClient(f"grpc+tcp://{orrery.host}:{orrery.port}")


def call_options(*headers: tuple[bytes, bytes]) -> flight.FlightCallOptions:
    return flight.FlightCallOptions(headers=list(headers), timeout=CALL_TIMEOUT_S)


def adbc_db_kwargs(**extra: str) -> dict[str, str]:
    """Driver options every ADBC connection in the tests uses."""
    kwargs = {
        "adbc.flight.sql.rpc.timeout_seconds.fetch": str(CALL_TIMEOUT_S),
        "adbc.flight.sql.rpc.timeout_seconds.query": str(CALL_TIMEOUT_S),
        "adbc.flight.sql.rpc.timeout_seconds.update": str(CALL_TIMEOUT_S),
    }
    kwargs.update(extra)
    return kwargs
