// Migration 10: the audiences whose rows a view set defined in SQL left out of a range. Its extract failed on the
// data over the range, so it was run once per audience of its sources, and these audiences' runs failed: the range's
// partition holds the other audiences' rows (one tenant's row cannot hide another's), and these wait for a retry
// (retry_quarantined_blocks(), a daemon of another version, or the range rebuilt). Ranges are in nanoseconds.

export const failedAudiences = `
CREATE TABLE failed_audiences (
  view_set_name VARCHAR(255) NOT NULL,
  begin_ns      BIGINT NOT NULL,
  end_ns        BIGINT NOT NULL,
  audience      TEXT NOT NULL,
  error         TEXT NOT NULL,
  orrery_version TEXT NOT NULL,
  failed_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
  PRIMARY KEY (view_set_name, begin_ns, audience)
);
`;
