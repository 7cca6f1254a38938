// Migration 9: an ingest mark (migration 8) says where its replay window ends, on the clock of the server that
// names the groups: `replay_until`, a name time (nanoseconds) after which that server commits with the WAL flush
// until its next mark (see src/ingestion/group-replay.ts). Before, the window ended 15 minutes after the mark's
// `marked_at` on Postgres's clock, so a server whose clock ran ahead of Postgres's (or stepped forward) could name a
// group past the window and a replay would not read it. A mark from before this migration has none (NULL): its window
// still ends 15 minutes after `marked_at`.

export const ingestMarksUntil = `
ALTER TABLE ingest_marks ADD COLUMN replay_until BIGINT;
`;
