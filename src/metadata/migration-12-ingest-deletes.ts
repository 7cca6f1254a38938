// Migration 12: a count of the statements that deleted processes or streams, which ingestion reads to insert a commit
// group's blocks alone (src/ingestion/known-streams.ts). A server remembers the processes and streams its inserts
// found or made, with the count read before them; a group naming only those runs the blocks insert by itself, guarded
// by the count being the same (read after the lock on `blocks` that retention's deletes hold), instead of
// orrery_insert_blocks' checks of both tables: ~0.7x its Postgres CPU per group (bench/ingestion/insert-statement.mjs).
// The triggers count every delete, retention's or anyone's, in the deleting transaction.

export const ingestDeletes = `
CREATE TABLE ingest_deletes (n bigint NOT NULL);
INSERT INTO ingest_deletes VALUES (0);
CREATE FUNCTION orrery_count_deletes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE ingest_deletes SET n = n + 1;
  RETURN NULL;
END
$$;
CREATE TRIGGER processes_deleted AFTER DELETE OR TRUNCATE ON processes
  FOR EACH STATEMENT EXECUTE FUNCTION orrery_count_deletes();
CREATE TRIGGER streams_deleted AFTER DELETE OR TRUNCATE ON streams
  FOR EACH STATEMENT EXECUTE FUNCTION orrery_count_deletes();
`;
