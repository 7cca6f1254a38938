// Migration 3: blocks the daemon could not read, kept out of their view set until retried
// (see Materializer: one unreadable block must not keep the rest of its window from materializing).

export const quarantinedBlocks = `
CREATE TABLE quarantined_blocks (
  block_id       UUID NOT NULL,
  view_set_name  TEXT NOT NULL,
  insert_time    TIMESTAMPTZ NOT NULL,
  error          TEXT NOT NULL,
  orrery_version TEXT NOT NULL,
  quarantined_at TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (block_id, view_set_name)
);
CREATE INDEX quarantined_blocks_insert_time ON quarantined_blocks (insert_time);
`;
