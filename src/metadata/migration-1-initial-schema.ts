// Migration 1: the tables of micromegas's telemetry database (processes, streams, blocks) and
// lakehouse (partitions, temporary files, view set definitions, query deny list), with Orrery's
// audience columns. Column names follow micromegas; strings are TEXT (micromegas: VARCHAR(255),
// which long OTLP attribute values would overflow); properties are JSONB objects.

const audienceCheck = (table: string): string =>
  `CONSTRAINT ${table}_audience_name CHECK (audience ~ '^[A-Za-z0-9_-]{1,255}$')`;

export const initialSchema = `
CREATE EXTENSION IF NOT EXISTS btree_gist;

CREATE TABLE processes (
  process_id        UUID NOT NULL,
  exe               TEXT,
  username          TEXT,
  realname          TEXT,
  computer          TEXT,
  distro            TEXT,
  cpu_brand         TEXT,
  tsc_frequency     BIGINT,
  start_time        TIMESTAMPTZ,
  start_ticks       BIGINT,
  insert_time       TIMESTAMPTZ NOT NULL DEFAULT now(),
  parent_process_id UUID,
  properties        JSONB NOT NULL DEFAULT '{}',
  audience          TEXT NOT NULL,
  CONSTRAINT processes_process_id_unique UNIQUE (process_id),
  ${audienceCheck('processes')}
);
CREATE INDEX process_insert_time ON processes (insert_time);
CREATE INDEX process_start_time ON processes (start_time);
CREATE INDEX parent_process_id ON processes (parent_process_id);

CREATE TABLE streams (
  stream_id             UUID NOT NULL,
  process_id            UUID NOT NULL,
  dependencies_metadata BYTEA,
  objects_metadata      BYTEA,
  tags                  TEXT[] NOT NULL DEFAULT '{}',
  properties            JSONB NOT NULL DEFAULT '{}',
  insert_time           TIMESTAMPTZ NOT NULL DEFAULT now(),
  format                TEXT NOT NULL DEFAULT 'micromegas-transit',
  CONSTRAINT streams_stream_id_unique UNIQUE (stream_id)
);
CREATE INDEX stream_process_id ON streams (process_id);
CREATE INDEX stream_insert_time ON streams (insert_time);

CREATE TABLE blocks (
  block_id      UUID NOT NULL,
  stream_id     UUID NOT NULL,
  process_id    UUID NOT NULL,
  begin_time    TIMESTAMPTZ,
  begin_ticks   BIGINT,
  end_time      TIMESTAMPTZ,
  end_ticks     BIGINT,
  nb_objects    INT,
  object_offset BIGINT,
  payload_size  BIGINT,
  insert_time   TIMESTAMPTZ NOT NULL DEFAULT now(),
  audience      TEXT NOT NULL,
  CONSTRAINT blocks_block_id_unique UNIQUE (block_id),
  ${audienceCheck('blocks')}
);
CREATE INDEX block_begin_time ON blocks (begin_time);
CREATE INDEX block_end_time ON blocks (end_time);
CREATE INDEX block_insert_time ON blocks (insert_time);
CREATE INDEX block_stream_id ON blocks (stream_id);

-- An empty partition (nothing in its range) is a row with num_rows = 0 and no file.
-- Ranges are half-open: [begin_insert_time, end_insert_time).
CREATE TABLE lakehouse_partitions (
  view_set_name     TEXT NOT NULL,
  view_instance_id  TEXT NOT NULL,
  begin_insert_time TIMESTAMPTZ NOT NULL,
  end_insert_time   TIMESTAMPTZ NOT NULL,
  min_event_time    TIMESTAMPTZ,
  max_event_time    TIMESTAMPTZ,
  updated           TIMESTAMPTZ NOT NULL DEFAULT now(),
  file_path         TEXT,
  file_size         BIGINT,
  file_schema_hash  BYTEA NOT NULL,
  source_data_hash  BYTEA NOT NULL,
  num_rows          BIGINT NOT NULL,
  sort_order        TEXT[],
  CONSTRAINT lakehouse_partitions_file_path_unique UNIQUE (file_path),
  CONSTRAINT lakehouse_partitions_insert_range CHECK (begin_insert_time <= end_insert_time),
  CONSTRAINT lakehouse_partitions_no_overlap EXCLUDE USING gist (
    view_set_name WITH =,
    view_instance_id WITH =,
    file_schema_hash WITH =,
    tstzrange(begin_insert_time, end_insert_time) WITH &&
  )
);
CREATE INDEX lh_part_begin_insert ON lakehouse_partitions (view_set_name, view_instance_id, begin_insert_time);
CREATE INDEX lh_part_end_insert ON lakehouse_partitions (view_set_name, view_instance_id, end_insert_time);
CREATE INDEX lh_part_min_time ON lakehouse_partitions (view_set_name, view_instance_id, min_event_time);
CREATE INDEX lh_part_max_time ON lakehouse_partitions (view_set_name, view_instance_id, max_event_time);

-- Files of retired partitions, deleted once expired (readers may still hold them until then).
CREATE TABLE temporary_files (
  file_path  TEXT NOT NULL,
  file_size  BIGINT NOT NULL,
  expiration TIMESTAMPTZ NOT NULL
);
CREATE INDEX temporary_files_expiration ON temporary_files (expiration);

-- View sets defined by CREATE MATERIALIZED VIEW.
CREATE TABLE lakehouse_view_set_definitions (
  view_set_name          TEXT PRIMARY KEY,
  definition_sql         TEXT NOT NULL,
  extract_query          TEXT NOT NULL,
  count_src_query        TEXT NOT NULL,
  merge_partitions_query TEXT NOT NULL,
  update_group           INT NOT NULL,
  view_options           JSONB NOT NULL DEFAULT '{}',
  created_at             TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_at             TIMESTAMPTZ NOT NULL DEFAULT now(),
  updated_by             TEXT
);

-- deny_queries(match_expr, reason): a boolean expression over a query's attributes.
CREATE TABLE query_deny_list (
  rule_id    BIGSERIAL PRIMARY KEY,
  match_expr TEXT NOT NULL,
  reason     TEXT NOT NULL,
  created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  created_by TEXT
);
`;
