// Migration 7: a partition whose file cannot be read and whose range cannot be rebuilt (its source past
// retention) stays registered, so statements reading it fail with PARTITION_LOST rather than answer
// without its rows; these columns record when that was found and why, for list_lost_partitions(). The
// partition's row leaves with it when an admin retires it.

export const lostPartitions = `
ALTER TABLE lakehouse_partitions ADD COLUMN lost_error TEXT, ADD COLUMN lost_at TIMESTAMPTZ;
`;
