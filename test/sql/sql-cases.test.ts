// Runs every test/sql/*.test case file (format: test/sql/README.md) against an Orrery of its own, each
// record a subtest, every statement a real Flight SQL call over a socket with the record's key.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { tableFromArrays, type Table } from 'apache-arrow';
import { FlightClientError } from '../../src/client/index.js';
import { nativeExportProblem } from '../../src/engine/index.js';
import { packAny, TestFlightClient } from '../support/flight-client.js';
import { adminKey, readerKey, startTestOrrery } from '../support/orrery-process.js';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { publishFolder } from '../support/publish.js';
import {
  parseCaseFile,
  renderRows,
  substitute,
  typeLetter,
  type CasePath,
  type CaseRecord,
  type CaseUser,
} from '../support/sql-cases.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const casesDir = join(root, 'test', 'sql');
const teamKey = { name: 'team_x', key: 'team-x-key-0123' };
const keys: Record<Exclude<CaseUser, 'anonymous'>, string> = {
  admin: adminKey.key,
  reader: readerKey.key,
  team_x: teamKey.key,
};
/** The times ingested log records carry: 2024-01-02T03:04:05Z plus one second per record. */
const firstLogTime = 1704164645000000000n;

const variables = ['WINDOW_BEGIN', 'WINDOW_END', 'WINDOW_HOUR', 'CASES_DIR'];

/**
 * The variables' values for a file starting now. ${WINDOW_BEGIN} / ${WINDOW_END}: a 180 s range of
 * whole minutes around now, holding what the file ingests, written as Orrery writes times in messages.
 * ${WINDOW_HOUR}: the UTC hour holding ${WINDOW_BEGIN}, as rows write a time (an hourly bucket of it).
 */
function variableValues(): Record<string, string> {
  const minute = Math.floor(Date.now() / 60_000) * 60;
  const rfc3339 = (seconds: number): string => new Date(seconds * 1000).toISOString().replace('.000Z', '.000000000Z');
  const hour = new Date(Math.floor((minute - 60) / 3600) * 3600 * 1000).toISOString().replace('.000Z', 'Z');
  return {
    WINDOW_BEGIN: rfc3339(minute - 60),
    WINDOW_END: rfc3339(minute + 120),
    WINDOW_HOUR: hour,
    CASES_DIR: casesDir,
  };
}

/** Whether the servers here fill results with the native Arrow exporter (`onlyif native` records). */
const nativeExport = process.env.ORRERY_NATIVE !== 'off' && nativeExportProblem() === '';

/**
 * ORRERY_SQL_CASES_RESOURCES=on (scripts/run-tests.mjs): the files whose log_entries rows the resources of
 * test/sql/publication/ cover (a stored column, bloom_filter, set and text indexes, a projection) run once more, on
 * a server where that folder is published with `orrery publish` before their first record: every answer must be the
 * one without (database-resources.md), and every log_entries partition they write holds each resource. Three files
 * alone, for CI's time (each file adds a server's start, about 20 s on 2 loaded cores): those reading log_entries the
 * most ways (audiences, DDL over it, the admin procedures retiring and rebuilding its partitions). Ten more pass so
 * too (audience-statistics, deny-rules, no-audience-apart-from-blank, reader-allow-list, rewritten-names, sketches,
 * view-dependencies, view-set-audience-isolation, view-set-no-audience-rows, view-set-replace-failed); the files that
 * publish resources of their own compare answers with and without already.
 */
const withResources = process.env.ORRERY_SQL_CASES_RESOURCES === 'on';
const resourceCases = new Set(['audiences.test', 'procedures.test', 'view-ddl.test']);
const publication = join(casesDir, 'publication');

const only = process.env.ORRERY_SQL_CASES; // e.g. ORRERY_SQL_CASES=permissions runs test/sql/permissions.test alone
for (const entry of readdirSync(casesDir)
  .filter((f) => f.endsWith('.test'))
  .sort()) {
  if (only && entry !== `${only}.test`) continue;
  if (withResources && !resourceCases.has(entry)) continue;
  const path = relative(root, join(casesDir, entry));
  const file = parseCaseFile(path, readFileSync(join(casesDir, entry), 'utf8'), variables);

  describe(`${path}${withResources ? ' (resources published)' : ''}: ${file.description}`, () => {
    let orrery: Awaited<ReturnType<typeof startTestOrrery>>;
    const clients = new Map<CaseUser, TestFlightClient>();
    let values: Record<string, string>;
    before(async () => {
      values = variableValues();
      const settings = Object.fromEntries(
        Object.entries(file.settings).map(([name, value]) => [name, substitute(value, values)]),
      );
      orrery = await startTestOrrery({
        MICROMEGAS_API_KEYS: JSON.stringify([
          adminKey,
          { ...readerKey, audiences: ['public'] },
          { ...teamKey, audiences: ['team_x'] },
        ]),
        ...settings,
      });
      for (const user of ['admin', 'reader', 'team_x', 'anonymous'] as const) {
        const client = new TestFlightClient(orrery.address);
        if (user !== 'anonymous') client.headers.authorization = `Bearer ${keys[user]}`;
        clients.set(user, client);
      }
      if (withResources) {
        const published = await publishFolder(orrery.address, publication);
        assert.equal(published.status, 0, [...published.out, ...published.err].join('\n'));
      }
    });
    after(async () => {
      for (const client of clients.values()) client.close();
      await orrery?.close();
    });

    for (const record of file.records) {
      const skip =
        record.only && record.only.holds !== nativeExport ? `${record.only.holds ? 'onlyif' : 'skipif'} native` : false;
      it(`${path}:${record.line} ${title(record)}`, { skip }, () =>
        run(withValues(record, values), clients.get(record.user)!, orrery.httpPort, `${path}:${record.line}`),
      );
    }
    if (withResources)
      it(`${path}: every log_entries partition written holds each published resource`, () =>
        // procedures.test's last records retire every partition it wrote.
        resourcesHeld(orrery, entry !== 'procedures.test'));
  });
}

/** Checks that every log_entries partition file holds the stored column, each index's statistics and a projection copy. */
async function resourcesHeld(orrery: Awaited<ReturnType<typeof startTestOrrery>>, someFile: boolean): Promise<void> {
  const { rows } = await orrery.metadata.query<{ files: number; column: number; stats: number; copies: number }>(
    `WITH f AS (SELECT file_path FROM lakehouse_partitions WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL)
     SELECT (SELECT count(*)::int FROM f) AS files,
            (SELECT count(*)::int FROM resource_column_files JOIN f USING (file_path)) AS column,
            (SELECT count(*)::int FROM resource_partition_stats JOIN f USING (file_path)) AS stats,
            (SELECT count(*)::int FROM resource_projection_files JOIN f USING (file_path)) AS copies`,
  );
  const [{ files, ...held }] = rows;
  if (someFile) assert.ok(files > 0, 'the file wrote no log_entries partition: the resources cover nothing of it');
  assert.deepEqual(held, { column: files, stats: 3 * files, copies: files });
}

function withValues(record: CaseRecord, values: Record<string, string>): CaseRecord {
  switch (record.kind) {
    case 'ingest':
      return record;
    case 'statement ok':
      return { ...record, sql: substitute(record.sql, values) };
    case 'statement error':
      return { ...record, sql: substitute(record.sql, values), message: substitute(record.message, values) };
    case 'query':
      return {
        ...record,
        sql: substitute(record.sql, values),
        rows: record.rows.map((row) => substitute(row, values)),
      };
  }
}

function title(record: CaseRecord): string {
  if (record.kind === 'ingest')
    return `ingest logs ${record.exe} ${record.count}${record.pods ? ` pods ${record.pods}` : ''} (${record.user})`;
  const sql = record.sql.replace(/\s+/g, ' ');
  return `${record.kind} (${record.user}) ${sql.length > 80 ? `${sql.slice(0, 77)}...` : sql}`;
}

async function run(record: CaseRecord, client: TestFlightClient, httpPort: number, where: string): Promise<void> {
  switch (record.kind) {
    case 'ingest': {
      const { pods } = record;
      const logs = Array.from({ length: record.count }, (_, i) => ({
        time: firstLogTime + BigInt(i) * 1_000_000_000n,
        severity: i % 2 ? 9 : 17,
        body: `${record.exe} ${i}`,
        ...(pods === undefined ? {} : { attributes: { pod: `pod-${i % pods}` } }),
      }));
      const key = keys[record.user as Exclude<CaseUser, 'anonymous'>];
      const response = await postOtlp(httpPort, 'logs', key, logsRequest({ 'service.name': record.exe }, logs));
      assert.equal(response.status, 200, `${where}: OTLP ingestion answered ${response.status} ${response.text}`);
      return;
    }
    case 'statement ok':
      await execute(client, record.sql, record.path).catch((error: unknown) =>
        assert.fail(`${where}: expected success, got ${describeError(error)}`),
      );
      return;
    case 'statement error': {
      const outcome = await execute(client, record.sql, record.path).then(
        () => undefined,
        (error: unknown) => error,
      );
      if (outcome === undefined)
        assert.fail(`${where}: expected ${record.status} '${record.message}', but the statement succeeded`);
      if (!(outcome instanceof FlightClientError))
        throw outcome instanceof Error ? outcome : new Error(String(outcome as string));
      const pattern = record.message.startsWith('<REGEX>:')
        ? new RegExp(`^(?:${record.message.slice(8)})$`)
        : undefined;
      const message = pattern?.test(outcome.details) ? record.message : outcome.details;
      assert.deepEqual(
        { status: outcome.status, message },
        { status: record.status, message: record.message },
        `${where}: wrong error`,
      );
      return;
    }
    case 'query': {
      const table = await execute(client, record.sql, record.path).catch((error: unknown) =>
        assert.fail(`${where}: expected rows, got ${describeError(error)}`),
      );
      const declared = record.types.split('');
      const actualTypes = table.schema.fields.map((f) => typeLetter(f.type));
      assert.equal(
        actualTypes.join(''),
        declared.join(''),
        `${where}: column types (${table.schema.fields.map((f) => `${f.name}: ${String(f.type)}`).join(', ')})`,
      );
      if (record.names)
        assert.deepEqual(
          table.schema.fields.map((f) => f.name),
          record.names,
          `${where}: column names`,
        );
      const rows = renderRows(table);
      if (record.rowsort) rows.sort();
      assert.deepEqual(rows, record.rows, `${where}: wrong rows`);
      return;
    }
  }
}

/** Runs a statement through one Flight SQL path and returns what it answered as a table. */
async function execute(client: TestFlightClient, sql: string, path: CasePath): Promise<Table> {
  switch (path) {
    case 'query':
      return client.query(sql);
    case 'update': {
      const count = await client.updateCount(sql);
      return tableFromArrays({ count: BigInt64Array.from([BigInt(count)]) });
    }
    case 'prepared': {
      const prepared = await client.prepare(sql);
      try {
        const info = await client.getFlightInfo(
          packAny('CommandPreparedStatementQuery', { preparedStatementHandle: prepared.handle }),
        );
        return (await client.doGet(info.endpoints[0].ticket)).table;
      } finally {
        await client.doAction(
          'ClosePreparedStatement',
          packAny('ActionClosePreparedStatementRequest', { preparedStatementHandle: prepared.handle }),
        );
      }
    }
  }
}

function describeError(error: unknown): string {
  return error instanceof FlightClientError ? `${error.status} '${error.details}'` : String(error);
}
