import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { SqlInfoValue, SqlInfoValues } from '../flight/index.js';

// What Orrery answers to GetSqlInfo beyond the protocol defaults: its name and version,
// and the keyword and function lists SQL editors (Grafana, DBeaver) use for completion.

const keywords = [
  'ANTI',
  'ASOF',
  'ATTACH',
  'COLUMNS',
  'DESCRIBE',
  'EXCLUDE',
  'ILIKE',
  'MACRO',
  'PIVOT',
  'POSITIONAL',
  'QUALIFY',
  'REPLACE',
  'SAMPLE',
  'SEMI',
  'SUMMARIZE',
  'UNPIVOT',
];
const numericFunctions = [
  'abs',
  'ceil',
  'floor',
  'round',
  'ln',
  'log10',
  'log2',
  'pow',
  'sqrt',
  'exp',
  'greatest',
  'least',
  'mod',
];
const stringFunctions = [
  'concat',
  'contains',
  'length',
  'lower',
  'upper',
  'trim',
  'ltrim',
  'rtrim',
  'substring',
  'replace',
  'regexp_matches',
  'regexp_extract',
  'regexp_replace',
  'split_part',
  'starts_with',
  'ends_with',
  'strpos',
  'string_agg',
];
const systemFunctions = ['current_database', 'current_schema', 'version', 'typeof'];
const datetimeFunctions = [
  'date_bin',
  'date_trunc',
  'date_part',
  'epoch',
  'epoch_ns',
  'make_timestamp',
  'now',
  'strftime',
  'strptime',
  'time_bucket',
  'to_timestamp',
];

/**
 * The version of an installed package: the package.json of that name above its entry point (its
 * exports do not include package.json).
 */
export function installedVersion(name: string): string {
  for (let dir = dirname(createRequire(import.meta.url).resolve(name)); dir !== dirname(dir); dir = dirname(dir)) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (manifest.name === name && manifest.version) return manifest.version;
    } catch {
      // no package.json at this level
    }
  }
  throw new Error(`no package.json of ${name} above its entry point`);
}

/** The Arrow version this server encodes with (SqlInfo 2): the apache-arrow package it runs. */
const arrowVersion = installedVersion('apache-arrow');

/** `transactions`: BeginTransaction / EndTransaction are answered (where series tables are). */
export function sqlInfo(version: string, supports: { transactions: boolean }): SqlInfoValues {
  return new Map<number, SqlInfoValue>([
    // SqlInfo 8 (FLIGHT_SQL_SERVER_TRANSACTION): 1 = transactions, no savepoints. ADBC begins one at
    // connect when autocommit is off, which is why it stays 0 where nothing could be committed.
    [8, supports.transactions ? 1 : 0],
    ...(supports.transactions
      ? ([
          [10, true], // bulk ingestion (CommandStatementIngest) into series tables
          [11, true], // ... inside a transaction too
          [562, 3n], // default isolation: DuckDB's snapshot isolation, reported as REPEATABLE READ
          [563, true], // transactions
          [564, 1 << 3], // isolation levels offered: REPEATABLE READ
          [572, true], // batch updates (executeBatch, executemany)
        ] as Array<[number, SqlInfoValue]>)
      : []),
    [0, 'Orrery'],
    [1, version],
    [2, arrowVersion],
    [508, keywords],
    [509, numericFunctions],
    [510, stringFunctions],
    [511, systemFunctions],
    [512, datetimeFunctions],
  ]);
}
