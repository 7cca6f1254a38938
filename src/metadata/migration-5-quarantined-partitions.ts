// Migration 5: partition files that could not be read (truncated, overwritten), taken out of
// lakehouse_partitions so that queries and merges skip them and their range is rebuilt from source.
// The file stays where it was, for inspection.

export const quarantinedPartitions = `
CREATE TABLE quarantined_partitions (
  file_path         VARCHAR(2047) PRIMARY KEY,
  view_set_name     VARCHAR(255) NOT NULL,
  view_instance_id  VARCHAR(255) NOT NULL,
  begin_insert_time TIMESTAMPTZ NOT NULL,
  end_insert_time   TIMESTAMPTZ NOT NULL,
  num_rows          BIGINT NOT NULL,
  file_size         BIGINT,
  error             TEXT NOT NULL,
  orrery_version    TEXT NOT NULL,
  quarantined_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);
`;
