// Migration 8: the rows of an acknowledged OTLP request are committed without waiting for Postgres's WAL flush;
// they are durable already as the manifest of the commit group's payload object, fsynced before the 200 (see
// src/ingestion/group-replay.ts). Each ingesting server keeps here, with a synchronous commit a few times a second,
// the name time from which its groups may not yet be flushed: after a crash of Postgres (or of the machine), the
// group objects named from then on are read again and their rows inserted (ON CONFLICT DO NOTHING).
// `postgres_started` is when Postgres last started or recovered from a crash, as of the mark (see POSTGRES_STARTED
// in group-replay.ts): a mark that finds another one knows Postgres restarted since, and replays before it moves.

export const ingestMarks = `
CREATE TABLE ingest_marks (
  writer           UUID PRIMARY KEY,
  replay_from      BIGINT NOT NULL,
  postgres_started TIMESTAMPTZ NOT NULL,
  marked_at        TIMESTAMPTZ NOT NULL DEFAULT now()
);
`;
