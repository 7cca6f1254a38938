/**
 * Where payloads and Parquet partitions live. Paths are relative, `/`-separated object
 * keys. Writes are atomic: an object is either absent or complete.
 */
export interface ObjectStore {
  /**
   * Writes an object whole; replaces any previous one. `durable: false` (scratch objects read at once
   * and deleted after) lets a local store skip its fsync.
   */
  put(key: string, bytes: Uint8Array, options?: { durable?: boolean }): Promise<void>;
  /**
   * Writes a new object, its parts one after another, durably: one whose key nothing else writes (it carries a
   * random id) and that nothing reads before the caller has recorded it elsewhere (a commit group's payloads,
   * named by rows committed after the write). Fails when the key exists. Unlike `put` it need not be atomic: a
   * local store writes it in place (no temporary file, no rename); a crash midway leaves an object no row
   * names, which the orphan sweep deletes.
   */
  putNew(key: string, parts: readonly Uint8Array[]): Promise<void>;
  /**
   * Readies `keys` for `putNew`s expected soon, so that their own work starts earlier: a local store creates the
   * empty files and makes their names durable now (one fsync per folder for all of them), leaving putNew the bytes
   * to write and sync. Never fails (putNew then does all of it); a reservation unused after a few seconds is dropped.
   */
  reserveNew(keys: readonly string[]): void;
  /** Writes an object only if it does not exist yet; false when it already did. */
  putIfAbsent(key: string, bytes: Uint8Array): Promise<boolean>;
  get(key: string): Promise<Uint8Array>;
  /** `length` bytes of an object from `offset` (fewer when it is shorter); null when it does not exist. */
  readRange(key: string, offset: number, length: number): Promise<Uint8Array | null>;
  /** Deletes an object; deleting a missing one is not an error. */
  delete(key: string): Promise<void>;
  /** Keys under a prefix, sorted. */
  list(prefix: string): Promise<string[]>;
  /**
   * Keys under a prefix after `after` and up to `until` (in key order; neither need be a key), sorted. S3 starts its
   * listing after `after` and stops past `until`: one request per 1,000 keys in the range, not per 1,000 under the
   * prefix.
   */
  listBetween(prefix: string, after: string, until: string): Promise<string[]>;
  /**
   * Keys under a prefix last written before `before`, a page at a time, in no set order; a local
   * store includes the temporary files a killed writer left, which `delete` removes.
   */
  listWrittenBefore(prefix: string, before: Date): AsyncGenerator<string[]>;
  /** Abandons the unfinished multipart uploads started before `before` (a killed writer's parts); returns how many. */
  abortUploadsStartedBefore(before: Date): Promise<number>;
  size(key: string): Promise<number | null>;
  /** Where DuckDB opens a key: a file path, or an `s3://` URL. */
  location(key: string): string;
  /** The location of a key DuckDB is about to write (COPY ... TO), once it can be written there. */
  writableLocation(key: string): Promise<string>;
  /** The prefix of every location, for DuckDB's allowed_directories. */
  readonly root: string;
  /** Other spellings of locations that DuckDB's errors may show (the endpoint's http:// URL). */
  readonly aliases: readonly string[];
  /** What DuckDB needs to reach the store: the S3 secret (CREATE SECRET), run on Orrery's own engines at set-up. */
  readonly duckdbSetup: readonly string[];
  /** DuckDB settings for reading the store, run on Orrery's own engines at set-up (their text may be shown). */
  readonly duckdbSettings: readonly string[];
  /** True when DuckDB reaches the store through the httpfs extension. */
  readonly needsHttpfs: boolean;
  /** Lets go of the store's connections; idempotent. */
  close(): void;
}
