import type { SqlInfoValue, SqlInfoValues } from './backend.js';

/** Union arm of each SqlInfo value, by id: 0 string, 1 bool, 2 int64, 3 int32, 4 string list, 5 int32→int32 list map. */
export type SqlInfoArm = 0 | 1 | 2 | 3 | 4 | 5;

const ranges: Array<[SqlInfoArm, number[]]> = [
  [0, [0, 1, 2, 6, 7, 504, 513, 514, 529, 530, 531]],
  [
    1,
    [
      3, 4, 5, 9, 10, 11, 500, 501, 502, 506, 515, 516, 518, 519, 520, 521, 523, 524, 527, 532, 536, 537, 539, 556, 563,
      565, 566, 572, 573, 574, 575, 576,
    ],
  ],
  [2, [...span(541, 555), ...span(557, 562)]],
  [3, [8, 100, 101, 503, 505, 507, 522, 525, 526, 528, 533, 534, 535, 538, 540, 564, 567, 568, 569, 570, 571]],
  [4, [508, 509, 510, 511, 512]],
  [5, [517]],
];

function span(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

/** The arm every known SqlInfo id is sent in (what JDBC and ADBC cast it to). */
export const sqlInfoArms: ReadonlyMap<number, SqlInfoArm> = new Map(
  ranges.flatMap(([arm, ids]) => ids.map((id) => [id, arm] as const)),
);

/**
 * Ids answered only when asked for by id. Leaving them out of the full listing keeps exactly
 * 17 rows below 508, which is where the Grafana Flight SQL editor looks for its keyword and
 * function lists (rows 17 to 21).
 */
const onlyWhenAsked = new Set([6, 7, 11, 100, 101]);

/** Service-level answers; the backend's own values override them. */
export const defaultSqlInfo: SqlInfoValues = new Map<number, SqlInfoValue>([
  [3, false], // read-only
  [4, true], // SQL
  [5, false], // Substrait
  [8, 0], // no transactions: ADBC would otherwise begin one at connect
  [9, false], // CancelQuery
  [10, false], // bulk ingestion
  [11, false],
  [100, 0],
  [101, 0],
  [500, false],
  [501, false],
  [502, false],
  [503, 1], // identifiers: case insensitive
  [504, '"'],
  [505, 3], // quoted identifiers: case sensitive
  [506, true],
  [507, 2], // nulls sorted at end (DuckDB's NULLS LAST default)
  [513, '\\'],
  [514, ''],
  [515, true],
  [516, true],
  [517, new Map<number, number[]>()],
  [518, true],
  [519, false],
  [520, true],
  [521, true],
  [522, 3],
  [523, true],
  [524, true],
  [525, 1],
  [526, 1],
  [527, false],
  [528, 2],
  [529, 'schema'],
  [530, 'procedure'],
  [531, 'catalog'],
  [532, true],
  [533, 0],
  [534, 0],
  [535, 0],
  [536, false],
  [537, false],
  [538, 15],
  [539, true],
  [540, 3],
  ...span(541, 555).map((id) => [id, 0n] as [number, bigint]),
  [556, false],
  ...span(557, 561).map((id) => [id, 0n] as [number, bigint]),
  [562, 0n],
  [563, false],
  [564, 0],
  [565, false],
  [566, false],
  [567, 1],
  [568, 0],
  [569, 1],
  [570, 0],
  [571, 0],
  [572, false],
  [573, false],
  [574, false],
  [575, false],
  [576, false],
]);

/** Resolves the (id, value) rows to answer, ascending by id. Unknown ids are skipped. */
export function selectSqlInfo(values: SqlInfoValues, requested: readonly number[]): Array<[number, SqlInfoValue]> {
  const merged = new Map([...defaultSqlInfo, ...values]);
  const ids =
    requested.length > 0 ? [...new Set(requested)] : [...merged.keys()].filter((id) => !onlyWhenAsked.has(id));
  return ids
    .filter((id) => merged.has(id) && sqlInfoArms.has(id))
    .sort((a, b) => a - b)
    .map((id) => [id, merged.get(id) as SqlInfoValue]);
}
