// Settings read from the environment: the maintenance engine's thread count (ORRERY_MAINTENANCE_THREADS), when an OTLP
// request is answered (ORRERY_INGEST_ACK), what rollups' in-memory copies may take (ORRERY_ROLLUP_KEPT_MEMORY_LIMIT),
// the passes a daemon runs (ORRERY_MAINTENANCE_PASSES).
import assert from 'node:assert/strict';
import { availableParallelism, totalmem } from 'node:os';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('ORRERY_MAINTENANCE_THREADS', () => {
  it('defaults to half the cores, at least one, whatever the query engine has', () => {
    const half = Math.max(1, Math.floor(availableParallelism() / 2));
    assert.equal(loadConfig({}).maintenanceThreads, half);
    assert.equal(loadConfig({ ORRERY_DUCKDB_THREADS: '7' }).maintenanceThreads, half);
  });
  it('takes a positive integer', () => {
    assert.equal(loadConfig({ ORRERY_MAINTENANCE_THREADS: '3' }).maintenanceThreads, 3);
  });
  for (const value of ['0', '-1', '1.5', 'two'])
    it(`refuses '${value}' naming the setting`, () => {
      assert.throws(
        () => loadConfig({ ORRERY_MAINTENANCE_THREADS: value }),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.message === `ORRERY_MAINTENANCE_THREADS must be a positive integer, got '${value}'`,
      );
    });
});

describe('ORRERY_INGEST_ACK', () => {
  it('defaults to committed; synced needs the replay marks', () => {
    assert.equal(loadConfig({}).ingestAck, 'committed');
    assert.equal(loadConfig({ ORRERY_INGEST_ACK: 'synced' }).ingestAck, 'synced');
    assert.throws(
      () => loadConfig({ ORRERY_INGEST_ACK: 'synced', ORRERY_INGEST_MARK_MS: '0' }),
      (error: unknown) => error instanceof ConfigError && /ORRERY_INGEST_MARK_MS may not be 0/.test(error.message),
    );
    assert.throws(
      () => loadConfig({ ORRERY_INGEST_ACK: 'fsync' }),
      (error: unknown) =>
        error instanceof ConfigError && /ORRERY_INGEST_ACK must be one of committed, synced/.test(error.message),
    );
  });
});

describe('ORRERY_ROLLUP_KEPT_MEMORY_LIMIT', () => {
  it("defaults to a quarter of the query engine's memory limit, DuckDB's default (80% of memory) when unset", () => {
    assert.equal(loadConfig({ ORRERY_DUCKDB_MEMORY_LIMIT: '4GiB' }).rollupKeptMemoryBytes, 2 ** 30);
    assert.equal(loadConfig({}).rollupKeptMemoryBytes, Math.floor((0.8 * totalmem()) / 4 / 2 ** 20) * 2 ** 20);
  });
  it('takes a size in bytes, refusing anything else naming the setting', () => {
    assert.equal(loadConfig({ ORRERY_ROLLUP_KEPT_MEMORY_LIMIT: '64MiB' }).rollupKeptMemoryBytes, 64 * 2 ** 20);
    assert.equal(loadConfig({ ORRERY_ROLLUP_KEPT_MEMORY_LIMIT: '2GB' }).rollupKeptMemoryBytes, 2e9);
    assert.throws(
      () => loadConfig({ ORRERY_ROLLUP_KEPT_MEMORY_LIMIT: 'half' }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.message === "ORRERY_ROLLUP_KEPT_MEMORY_LIMIT must be a size such as 4GB or 512MiB, got 'half'",
    );
  });
});

describe('ORRERY_MAINTENANCE_PASSES', () => {
  const names = (env: NodeJS.ProcessEnv): string[] => loadConfig(env).maintenancePasses.map((pass) => pass.name);
  it('defaults to every pass; takes a list of them, run finest first', () => {
    assert.deepEqual(names({}), ['second', 'minute', 'hour', 'day']);
    assert.deepEqual(names({ ORRERY_MAINTENANCE_PASSES: 'day, minute,hour' }), ['minute', 'hour', 'day']);
    assert.deepEqual(names({ ORRERY_MAINTENANCE_PASSES: 'second' }), ['second']);
  });
  for (const value of ['seconds', 'second,,minute', 'week'])
    it(`refuses '${value}' naming the setting`, () => {
      assert.throws(
        () => loadConfig({ ORRERY_MAINTENANCE_PASSES: value }),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.message ===
            `ORRERY_MAINTENANCE_PASSES must be a comma-separated list of second, minute, hour, day, got '${value}'`,
      );
    });
});
