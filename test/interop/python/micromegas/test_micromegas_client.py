"""Issue 11: micromegas's own Python client (the `micromegas` package, unchanged) against Orrery.

Telemetry goes in over OTLP/HTTP (logs, a gauge, a three-span trace of one service), the admin
materializes it with the client's own `materialize_partitions`, then every client call a user
makes reads it back: query / query_stream / query_arrow with the time-range headers, prepared
statements, find_process, query_streams, query_blocks, query_spans, the admin helpers, and the
`micromegas-query` and `micromegas-views` commands.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

import micromegas
import micromegas.admin
from micromegas.auth import StaticTokenAuthProvider
from micromegas.flightsql.client import FlightSQLClient

UTC = dt.timezone.utc
NS = 1_000_000_000


def post_otlp(orrery, signal: str, key: str, body: dict) -> None:
    request = urllib.request.Request(
        f"http://{orrery.host}:{orrery.http_port}/v1/{signal}",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "authorization": f"Bearer {key}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200


def resource(service: str) -> dict:
    return {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]}


class Ingested:
    """What the module's fixture sent, and where to find it."""

    def __init__(self, service: str, base_ns: int, window: tuple[dt.datetime, dt.datetime]):
        self.service = service
        self.base_ns = base_ns
        self.window = window
        self.process_id = ""
        self.streams: dict[str, str] = {}

    def at(self, seconds: float) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.base_ns / NS + seconds, UTC)


@pytest.fixture(scope="module")
def admin(orrery) -> FlightSQLClient:
    return FlightSQLClient(orrery.uri, auth_provider=StaticTokenAuthProvider(orrery.admin_key))


@pytest.fixture(scope="module")
def reader(orrery) -> FlightSQLClient:
    return FlightSQLClient(orrery.uri, auth_provider=StaticTokenAuthProvider(orrery.reader_key))


@pytest.fixture(scope="module")
def data(orrery, admin) -> Ingested:
    service = f"mm-client-{uuid.uuid4().hex[:8]}"
    now = dt.datetime.now(UTC)
    # Event times a few minutes back, on whole seconds plus 7 ns (nanoseconds must survive).
    base_ns = (int(now.timestamp()) - 300) * NS + 7
    minute = now.replace(second=0, microsecond=0)
    window = (minute - dt.timedelta(minutes=1), minute + dt.timedelta(minutes=2))
    sent = Ingested(service, base_ns, window)

    logs = [
        {"timeUnixNano": str(base_ns + i * NS), "severityNumber": 17 if i % 2 == 0 else 9, "body": {"stringValue": f"message {i}"}}
        for i in range(5)
    ]
    post_otlp(orrery, "logs", orrery.admin_key, {"resourceLogs": [{"resource": resource(service), "scopeLogs": [{"scope": {"name": "app"}, "logRecords": logs}]}]})
    points = [{"timeUnixNano": str(base_ns + i * NS), "asDouble": 1.5 * i} for i in range(3)]
    gauge = {"name": "queue_depth", "unit": "1", "gauge": {"dataPoints": points}}
    post_otlp(orrery, "metrics", orrery.admin_key, {"resourceMetrics": [{"resource": resource(service), "scopeMetrics": [{"scope": {"name": "app"}, "metrics": [gauge]}]}]})
    trace = "0123456789abcdef0123456789abcdef"
    spans = [
        ("00000000000000a1", None, "request", 0, 1000),
        ("00000000000000a2", "00000000000000a1", "query", 100, 400),
        ("00000000000000a3", "00000000000000a2", "fetch", 200, 300),
    ]
    otlp_spans = [
        {
            "traceId": trace,
            "spanId": span_id,
            **({"parentSpanId": parent} if parent else {}),
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(base_ns + begin),
            "endTimeUnixNano": str(base_ns + end),
        }
        for span_id, parent, name, begin, end in spans
    ]
    post_otlp(orrery, "traces", orrery.admin_key, {"resourceSpans": [{"resource": resource(service), "scopeSpans": [{"scope": {"name": "app"}, "spans": otlp_spans}]}]})

    # The interop server runs no daemon: the admin materializes, through the client's own call.
    for view in ["blocks", "processes", "streams", "log_entries", "measures", "spans"]:
        admin.materialize_partitions(view, window[0], window[1], 180)

    found = admin.query(f"SELECT process_id FROM processes WHERE exe = '{service}'")
    assert len(found) == 1, found
    sent.process_id = found["process_id"].iloc[0]
    streams = admin.query(f"SELECT stream_id, tags FROM streams WHERE process_id = '{sent.process_id}'")
    sent.streams = {list(row.tags)[0]: row.stream_id for row in streams.itertuples()}
    assert sorted(sent.streams) == ["log", "metrics", "traces"]
    return sent


def logs_sql(data: Ingested) -> str:
    return f"SELECT time, level, msg FROM log_entries WHERE exe = '{data.service}' ORDER BY time"


def test_query_returns_a_dataframe_with_nanosecond_utc_times(reader, data):
    df = reader.query(logs_sql(data), data.at(-60), data.at(60))
    assert list(df["msg"]) == [f"message {i}" for i in range(5)]
    assert list(df["level"]) == [2, 4, 2, 4, 2]
    assert str(df["time"].dtype) == "datetime64[ns, UTC]"
    assert [t.value for t in df["time"]] == [data.base_ns + i * NS for i in range(5)]


def test_the_time_range_headers_bound_the_rows(reader, data):
    df = reader.query(logs_sql(data), data.at(0.5), data.at(3.5))
    assert list(df["msg"]) == ["message 1", "message 2", "message 3"]
    # RFC 3339 strings, as the client also accepts them.
    df = reader.query(logs_sql(data), data.at(2.5).isoformat(), data.at(10).isoformat().replace("+00:00", "Z"))
    assert list(df["msg"]) == ["message 3", "message 4"]
    assert reader.query(logs_sql(data), data.at(100), data.at(200)).empty


def test_query_stream_yields_record_batches(reader, data):
    batches = list(reader.query_stream(logs_sql(data), data.at(-60), data.at(60)))
    assert batches and all(isinstance(b, pa.RecordBatch) for b in batches)
    assert sum(b.num_rows for b in batches) == 5


def test_query_arrow_keeps_arrow_types(reader, data):
    table = reader.query_arrow(logs_sql(data), data.at(-60), data.at(60))
    assert table.schema.field("time").type == pa.timestamp("ns", tz="UTC")
    assert table.schema.field("level").type == pa.int32()
    assert table.schema.field("msg").type == pa.string()
    assert table.num_rows == 5


def test_prepared_statements_describe_then_run(reader, data):
    statement = reader.prepare_statement(logs_sql(data))
    assert statement.query == logs_sql(data)
    assert statement.dataset_schema.names == ["time", "level", "msg"]
    assert sum(b.num_rows for b in reader.prepared_statement_stream(statement)) == 5


def test_find_process(reader, data):
    df = reader.find_process(data.process_id)
    assert len(df) == 1
    assert df["exe"].iloc[0] == data.service


def last_hour() -> tuple[dt.datetime, dt.datetime]:
    """The range a user passes for streams and blocks: they are found by insert time too."""
    now = dt.datetime.now(UTC)
    return now - dt.timedelta(hours=1), now + dt.timedelta(minutes=1)


def test_query_streams_by_process_and_tag(reader, data):
    df = reader.query_streams(*last_hour(), 10, process_id=data.process_id)
    assert sorted(df["stream_id"]) == sorted(data.streams.values())
    df = reader.query_streams(*last_hour(), 10, process_id=data.process_id, tag_filter="log")
    assert list(df["stream_id"]) == [data.streams["log"]]


def test_query_blocks(reader, data):
    df = reader.query_blocks(*last_hour(), 10, data.streams["log"])
    assert len(df) == 1
    assert int(df["nb_objects"].iloc[0]) == 5


def test_query_spans_reads_thread_spans(reader, data):
    df = reader.query_spans(data.at(-60), data.at(60), 10, data.streams["traces"])
    assert list(df["name"]) == ["request", "query", "fetch"]
    assert list(df["depth"]) == [0, 1, 2]
    assert list(df["duration"]) == [1000, 300, 100]
    assert list(df["parent"]) == [0, 0xA1, 0xA2]


def test_show_tables_and_information_schema(reader):
    """As micromegas's own test_information_schema: DataFusion's columns, the view sets listed."""
    df = reader.query("SHOW TABLES")
    assert list(df.columns) == ["table_catalog", "table_schema", "table_name", "table_type"]
    assert {"log_entries", "blocks", "streams", "processes", "measures", "spans"} <= set(df["table_name"])
    assert len(reader.query("SELECT * FROM information_schema.tables")) == len(df)


def test_micromegas_sql_functions(reader, data):
    df = reader.query(
        f"""SELECT property_get(process_properties, 'service.name') AS service,
                   count_from_histogram(make_histogram(0.0, 10.0, 10, value)) AS n,
                   date_bin(INTERVAL '1 minute', min(time)) AS minute
              FROM measures WHERE exe = '{data.service}' AND name = 'queue_depth' GROUP BY 1""",
        data.at(-60),
        data.at(60),
    )
    assert list(df["service"]) == [data.service]
    assert list(df["n"]) == [3]


def test_materialize_and_retire_partitions(admin, data, capsys):
    begin, end = data.window
    admin.retire_partitions("log_entries", "global", begin, end)
    assert admin.query(logs_sql(data), data.at(-60), data.at(60)).empty
    admin.materialize_partitions("log_entries", begin, end, 180)
    assert len(admin.query(logs_sql(data), data.at(-60), data.at(60))) == 5
    printed = capsys.readouterr().out
    assert "log_entries" in printed


def test_retire_incompatible_partitions(admin, data):
    name = f"mm_levels_{uuid.uuid4().hex[:8]}"
    extract = (
        "SELECT date_bin('1 minute', time) AS time_bin, process_id, level, count(*) AS count FROM log_entries "
        "WHERE insert_time >= '{begin}' AND insert_time < '{end}' GROUP BY ALL"
    )
    count = "SELECT sum(nb_objects) AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'"

    def create(extract_query: str, merge: str) -> None:
        admin.query(
            f"CREATE OR REPLACE MATERIALIZED VIEW {name} WITH (extract_query = $${extract_query}$$, "
            f"count_src_query = $${count}$$, merge_partitions_query = $${merge}$$, update_group = 5000, time_column = 'time_bin')"
        )

    create(extract, "SELECT time_bin, process_id, level, sum(count)::BIGINT AS count FROM {source} GROUP BY ALL")
    admin.materialize_partitions(name, data.window[0], data.window[1], 180)
    assert micromegas.admin.list_incompatible_partitions(admin, name).empty
    # Another schema: the partition written under the first is incompatible now.
    create(extract.replace("level, count(*)", "count(*)"),
           "SELECT time_bin, process_id, sum(count)::BIGINT AS count FROM {source} GROUP BY ALL")
    incompatible = micromegas.admin.list_incompatible_partitions(admin, name)
    assert len(incompatible) == 1
    result = micromegas.admin.retire_incompatible_partitions(admin, name)
    assert list(result["partitions_retired"]) == [1], result.to_dict("records")
    assert list(result["partitions_failed"]) == [0]
    assert micromegas.admin.list_incompatible_partitions(admin, name).empty
    admin.query(f"DROP MATERIALIZED VIEW {name}")


def run_cli(orrery, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """A micromegas command with a profile naming this server and the reader's key (HOME is tmp_path)."""
    key_file = tmp_path / "reader.key"
    key_file.write_text(orrery.reader_key)
    (tmp_path / ".micromegas").mkdir(exist_ok=True)
    (tmp_path / ".micromegas" / "config.json").write_text(json.dumps({"uri": orrery.uri, "api_key_file": str(key_file)}))
    env = {**os.environ, "HOME": str(tmp_path)}
    command = Path(sys.executable).parent / args[0]
    return subprocess.run([str(command), *args[1:]], env=env, capture_output=True, text=True, timeout=120)


def test_micromegas_query_command(orrery, data, tmp_path):
    sql = f"SELECT msg FROM log_entries WHERE exe = '{data.service}' ORDER BY time"
    done = run_cli(orrery, tmp_path, "micromegas-query", sql, "--begin", data.at(-60).isoformat(), "--end", data.at(60).isoformat(), "--format", "csv")
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines()[1:] if line] == [f"message {i}" for i in range(5)]


def test_micromegas_views_command_lists_definitions(orrery, tmp_path):
    done = run_cli(orrery, tmp_path, "micromegas-views", "list")
    assert done.returncode == 0, done.stderr
    assert "log_stats" in done.stdout


def protobuf_fields(data: bytes) -> dict[int, list]:
    """One protobuf message's fields: number -> values (varints as int, length-delimited as bytes)."""
    out: dict[int, list] = {}
    pos = 0

    def varint() -> int:
        nonlocal pos
        value = shift = 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while pos < len(data):
        tag = varint()
        if tag & 7 == 0:
            value = varint()
        else:
            assert tag & 7 == 2, f"wire type {tag & 7}"
            size = varint()
            value = data[pos : pos + size]
            pos += size
        out.setdefault(tag >> 3, []).append(value)
    return out


def trace_slices(path: Path) -> list[str]:
    """The track names and slice begins of a Perfetto trace file, in packet order."""
    described = []
    for packet in protobuf_fields(path.read_bytes()).get(1, []):
        fields = protobuf_fields(packet)
        if 60 in fields:
            descriptor = protobuf_fields(fields[60][0])
            if 3 in descriptor:
                described.append("process " + protobuf_fields(descriptor[3][0])[6][0].decode())
            elif 4 in descriptor:
                described.append("thread " + protobuf_fields(descriptor[4][0])[5][0].decode())
            else:
                described.append("track " + descriptor[2][0].decode())
        else:
            event = protobuf_fields(fields[11][0])
            if event[9][0] == 1:
                described.append(f"begin {event[23][0].decode()} at {fields[8][0] - 0}")
    return described


@pytest.mark.parametrize("span_types", ["thread", "async", "both"])
def test_perfetto_trace_writers(reader, data, tmp_path, span_types):
    """micromegas.perfetto's writers: the trace file they assemble from perfetto_trace_chunks."""
    out = tmp_path / f"{span_types}.perfetto"
    micromegas.perfetto.write_process_trace(reader, data.process_id, data.at(-60), data.at(60), str(out), span_types)
    track = "track Async Operations" if span_types == "async" else "thread traces"
    assert trace_slices(out) == [
        f"process {data.service}",
        track,
        f"begin request at {data.base_ns}",
        f"begin query at {data.base_ns + 100}",
        f"begin fetch at {data.base_ns + 200}",
    ]
    # write_process_trace_from_chunks is what write_process_trace calls; a process the key cannot
    # read (or none) writes no file.
    missing = tmp_path / "missing.perfetto"
    micromegas.perfetto.write_process_trace_from_chunks(
        reader, str(uuid.uuid4()), data.at(-60), data.at(60), span_types, str(missing)
    )
    assert not missing.exists()


def test_bulk_ingest_appends_to_a_series_table(admin, reader):
    """bulk_ingest sends CommandStatementIngest without table options: rows are appended to an existing series table."""
    name = f"mm_deploys_{uuid.uuid4().hex[:8]}"
    admin.query(f"CREATE TABLE {name} (ts TIMESTAMPTZ, service VARCHAR, version VARCHAR)")
    times = [dt.datetime(2026, 1, 1, 12, 0, s, tzinfo=UTC) for s in range(3)]
    table = pa.table(
        {
            "ts": pa.array(times, pa.timestamp("us", tz="UTC")),
            "service": ["api", "web", "api"],
            "version": ["1.0", "2.0", "1.1"],
        }
    )
    result = admin.bulk_ingest(name, table)
    assert result is not None and result.record_count == 3
    assert reader.bulk_ingest(name, table.slice(0, 1)).record_count == 1
    rows = admin.query(f"SELECT service, version, audience FROM {name} ORDER BY ts, audience")
    assert rows.to_dict("records") == [
        {"service": "api", "version": "1.0", "audience": "public"},
        {"service": "api", "version": "1.0", "audience": "public"},
        {"service": "web", "version": "2.0", "audience": "public"},
        {"service": "api", "version": "1.1", "audience": "public"},
    ]
    admin.query(f"DROP TABLE {name}")


def test_bulk_ingest_into_micromegas_replication_tables_is_refused(admin):
    """micromegas's own targets (processes, streams, blocks, payloads) are view sets in Orrery, or nothing."""
    table = pa.table({"process_id": [str(uuid.uuid4())], "exe": ["app"]})
    with pytest.raises(pa.ArrowInvalid) as failure:
        admin.bulk_ingest("processes", table)
    assert "ingest: 'processes' is a view set or static table, not a series table (bulk ingest writes series tables only)" in str(failure.value)
    with pytest.raises(pa.ArrowException) as failure:
        admin.bulk_ingest("payloads", table)
    assert "series table 'payloads' does not exist" in str(failure.value)
