import type { SqlInfoValue, SqlInfoValues } from '../flight/index.js';

// What Orrery answers to GetSqlInfo beyond the protocol defaults: its name and version,
// and the keyword and function lists SQL editors (Grafana, DBeaver) use for completion.

const keywords = [
  'ANTI', 'ASOF', 'ATTACH', 'COLUMNS', 'DESCRIBE', 'EXCLUDE', 'ILIKE', 'MACRO', 'PIVOT', 'POSITIONAL', 'QUALIFY',
  'REPLACE', 'SAMPLE', 'SEMI', 'SUMMARIZE', 'UNPIVOT',
];
const numericFunctions = ['abs', 'ceil', 'floor', 'round', 'ln', 'log10', 'log2', 'pow', 'sqrt', 'exp', 'greatest', 'least', 'mod'];
const stringFunctions = [
  'concat', 'contains', 'length', 'lower', 'upper', 'trim', 'ltrim', 'rtrim', 'substring', 'replace', 'regexp_matches',
  'regexp_extract', 'regexp_replace', 'split_part', 'starts_with', 'ends_with', 'strpos', 'string_agg',
];
const systemFunctions = ['current_database', 'current_schema', 'version', 'typeof'];
const datetimeFunctions = [
  'date_bin', 'date_trunc', 'date_part', 'epoch', 'epoch_ns', 'make_timestamp', 'now', 'strftime', 'strptime',
  'time_bucket', 'to_timestamp',
];

export function sqlInfo(version: string): SqlInfoValues {
  return new Map<number, SqlInfoValue>([
    [0, 'Orrery'],
    [1, version],
    [2, '21.2.0'],
    [508, keywords],
    [509, numericFunctions],
    [510, stringFunctions],
    [511, systemFunctions],
    [512, datetimeFunctions],
  ]);
}
