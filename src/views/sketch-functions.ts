// Mergeable sketches as DuckDB macros, in queries, view definitions and rollups alike. A sketch is
// a plain STRUCT value: the merge of sketches is the sketch of the union of their inputs,
// identical to it, so a rollup's merged buckets equal the raw ones. Four aggregates inside them
// (the log buckets of values, their sum, the HyperLogLog registers of hashes, their union) are the
// native addon's (engine/native/sketch-aggregates.cc) where it runs, and otherwise the SQL
// definitions below over DuckDB's own aggregates (histogram, list DISTINCT, list, sum), which
// return the same values at several times the cost.
//
// Macro parameters are expressions substituted wherever the body names them, so a body binds each
// costly argument once through a one-element list_transform (`list_transform([arg], a -> ...)[1]`)
// before using it several times or inside another lambda. Lambda parameters start with `__`: a
// column of the caller's query with a lambda parameter's name would take its place.

/** Quantiles are within this relative error of the exact quantile_disc (DDSketch's alpha). */
export const percentileRelativeError = 0.01;
/** Registers of a distinct sketch: 2^14, a relative standard error of 1.04 / 128 = 0.81 %. */
export const distinctPrecision = 14;

const gamma = (1 + percentileRelativeError) / (1 - percentileRelativeError);
// The log bucket of a finite non-zero |x| (ceil(log_gamma |x|)) lies within ±37,300 for every
// double, so bucket keys are sign(x) * (keyOffset + index): 0 holds zeros, and ±(keyOffset +
// infiniteIndex) the infinities (NaN counts with +infinity, as DuckDB orders it above all values).
const keyOffset = 40000;
const infiniteIndex = 40000;
const topKey = keyOffset + infiniteIndex;
const double = (value: number): string => `CAST('${value}' AS DOUBLE)`;
/** What the native aggregates take from here (EngineOptions.nativeSketches): 1 / ln(gamma), as the macros have it. */
export const nativeSketchParameters = { inverseLogGamma: 1 / Math.log(gamma) } as const;
const inverseLogGamma = double(nativeSketchParameters.inverseLogGamma);
const logGamma = double(Math.log(gamma));
// Half way (relatively) between a bucket's bounds gamma^(i-1) and gamma^i: alpha from either.
const midpointFactor = double(2 / (1 + gamma));

const rankBits = 64 - distinctPrecision;
const registers = 2 ** distinctPrecision;

// Both kinds share a `format` field naming the kind and its parameters, so that a sketch of the
// other kind given to percentile() or distinct_count() casts (to one with only that field set)
// and is refused by name, and a sketch made with other parameters is never read as this one.
const percentileFormat = `ddsketch(${percentileRelativeError})`;
const distinctFormat = `hll(${distinctPrecision})`;

/** The type of percentile_sketch(x): count, min and max of the values, and the count of each log bucket. */
export const percentileSketchType =
  'STRUCT(format VARCHAR, n BIGINT, min DOUBLE, max DOUBLE, log_buckets MAP(INTEGER, UBIGINT))';
/** The type of distinct_sketch(x): HyperLogLog registers, register * 64 + rank, for the registers that are not 0. */
export const distinctSketchType = 'STRUCT(format VARCHAR, hll_registers INTEGER[])';

const formatError = (fn: string, format: string, reads: string, found: string): string =>
  `error('${fn}() takes sketches made by ${reads}() (format ${format}), not of format ' || coalesce(${found}, 'NULL'))`;
/** A CASE branch refusing, by name, a sketch of another format than the function reads. */
const checkFormat = (fn: string, sketch: string, format: string, reads: string): string =>
  `WHEN ${sketch}.format IS DISTINCT FROM '${format}' THEN ${formatError(fn, format, reads, `${sketch}.format`)}`;
/** The same for an aggregate over sketches, which may be all NULL. */
const checkFormats = (fn: string, sketch: string, format: string, reads: string): string =>
  `WHEN min(${sketch}.format) <> '${format}' OR max(${sketch}.format) <> '${format}' OR count(${sketch}) <> count(${sketch}.format)
     THEN ${formatError(fn, format, reads, `nullif(min(${sketch}.format), '${format}')`)}`;

const emptyBuckets = 'MAP {}::MAP(INTEGER, UBIGINT)';

const helpers = [
  `CREATE OR REPLACE MACRO __orrery_dd_key(x) AS CASE
     WHEN x > 0 THEN ${keyOffset} + CAST(least(ceil(ln(x) * ${inverseLogGamma}), ${infiniteIndex}) AS INTEGER)
     WHEN x < 0 THEN -${keyOffset} - CAST(least(ceil(ln(-x) * ${inverseLogGamma}), ${infiniteIndex}) AS INTEGER)
     WHEN x = 0 THEN 0 END`,
  // The value a bucket stands for, kept within the sketch's [min, max]. The key is bound once: it is
  // __orrery_dd_rank's pass over the buckets, which each of the CASE's mentions ran again (up to five
  // times a row: bench/rollup-rewrite/README.md, "p99 per day: the percentile's rank looked up once").
  `CREATE OR REPLACE MACRO __orrery_dd_value(s, key) AS list_transform([key], __k -> least(greatest(CASE
     WHEN __k = 0 THEN 0
     WHEN __k >= ${topKey} THEN s.max
     WHEN __k <= -${topKey} THEN s.min
     WHEN __k > 0 THEN exp((__k - ${keyOffset}) * ${logGamma}) * ${midpointFactor}
     ELSE -exp((-__k - ${keyOffset}) * ${logGamma}) * ${midpointFactor} END, s.min), s.max))[1]`,
  // The value of 0-based rank r, exact at both ends: the bucket where the running count first
  // exceeds r, found by one pass of list_reduce from -(r + 1) (negative: not reached yet; then the
  // bucket's position).
  // Its lambda captures nothing: DuckDB 1.5's list_reduce pairs a captured per-row value with the
  // wrong rows once lists of several lengths share a vector.
  `CREATE OR REPLACE MACRO __orrery_dd_rank(s, r) AS CASE
     WHEN r = 0 THEN s.min
     WHEN r = s.n - 1 THEN s.max
     ELSE __orrery_dd_value(s, map_keys(s.log_buckets)[list_reduce(
       list_transform(map_values(s.log_buckets), __c -> CAST(__c AS BIGINT)),
       (__seen, __c, __i) -> CASE WHEN __seen >= 0 THEN __seen WHEN __seen + __c >= 0 THEN __i ELSE __seen + __c END,
       CAST(-(r + 1) AS BIGINT))]) END`,
  // Ertl's improved raw estimator ("New cardinality estimation algorithms for HyperLogLog
  // sketches", 2017), unbiased from 0 to far beyond 2^32 without bias tables or a switch to
  // linear counting: m^2 / (2 ln 2 * (sum of 2^-rank + m * sigma(empty registers / m))).
  `CREATE OR REPLACE MACRO __orrery_hll_sigma(x) AS list_transform([x], __x ->
     __x + list_sum(list_transform(range(1, 64), __k -> power(__x, power(2, __k)) * power(2, __k - 1))))[1]`,
  `CREATE OR REPLACE MACRO __orrery_hll_estimate(r) AS list_transform([r], __r -> CASE WHEN len(__r) = 0 THEN 0 ELSE CAST(round(
     ${registers * registers} / (2 * ln(2) * (list_sum(list_transform(__r, __e -> 1 / CAST(CAST(1 AS UBIGINT) << (__e % 64) AS DOUBLE)))
       + ${registers} * __orrery_hll_sigma((${registers} - len(__r)) / ${registers})))) AS BIGINT) END)[1]`,
];

// The SQL definitions of the native aggregates (engine/native/sketch-aggregates.cc), of the same
// names and results; an engine with the native ones must not create these (a macro would hide them).
const sqlAggregates = [
  // The count of each log bucket of the values that are not NULL.
  `CREATE OR REPLACE MACRO __orrery_dd_build(x) AS coalesce(histogram(__orrery_dd_key(x)), ${emptyBuckets})`,
  // A register and its rank (leading zeros of the other bits, plus one) from a 64-bit hash.
  `CREATE OR REPLACE MACRO __orrery_hll_entry(h) AS CAST(h >> ${rankBits} AS INTEGER) * 64 +
     greatest(1, ${rankBits} - CAST(floor(log2(CAST((h & ${2n ** BigInt(rankBits) - 1n}) | 1 AS DOUBLE))) AS INTEGER))`,
  // The largest rank of each register, from entries sorted by register then rank. Linear in the
  // entries, unlike __orrery_dd_union's former lambdas: reading one element of the captured list
  // copies nothing (bench/sketches: 600 sketches merged into one cost what they cost merged into
  // 100). A max per register by GROUP BY instead (as __orrery_dd_union sums) skips the sort and
  // halved a union of 10 groups, but was slower with many: 2,000 groups, and the build's 100.
  `CREATE OR REPLACE MACRO __orrery_hll_max(sorted) AS
     list_transform([coalesce(sorted, [])], __s -> list_filter(__s, (__e, __i) -> __i = len(__s) OR __e // 64 <> __s[__i + 1] // 64))[1]`,
  // The HyperLogLog entries of the hashes that are not NULL, one per register that is not empty.
  `CREATE OR REPLACE MACRO __orrery_hll_build(h) AS
     __orrery_hll_max(list_sort(list(DISTINCT __orrery_hll_entry(h)) FILTER (WHERE h IS NOT NULL)))`,
  // The entries of the union of lists of entries.
  `CREATE OR REPLACE MACRO __orrery_hll_union(entries) AS __orrery_hll_max(list_sort(flatten(list(entries))))`,
  // The counts of log buckets summed per key: the entries of the group's maps unnested and summed
  // by GROUP BY, linear in the entries. (A lambda summing runs of a sorted list would be quadratic:
  // DuckDB copies a list a lambda captures once per element.) The aggregate inside is the caller's,
  // bound to its group: DuckDB binds it so only where the call is not the argument of a typed macro
  // parameter, which is why percentile() takes its sketch untyped and casts it.
  `CREATE OR REPLACE MACRO __orrery_dd_union(buckets) AS (
     SELECT coalesce(map(list(__k ORDER BY __k), list(CAST(__n AS UBIGINT) ORDER BY __k)), ${emptyBuckets})
       FROM (SELECT __e.key AS __k, sum(__e.value) AS __n
               FROM (SELECT unnest(__l) AS __e FROM (SELECT flatten(list(map_entries(buckets))) AS __l))
              GROUP BY __e.key))`,
];

type Parameter = readonly [name: string, type?: string];

/** One macro with its overloads, each `(parameters) AS body`. */
interface Macro {
  readonly name: string;
  /** Each overload's parameters as (name, type) pairs, no type for any type, and body. */
  readonly overloads: readonly { readonly parameters: readonly Parameter[]; readonly body: string }[];
}

const sketchMacros: readonly Macro[] = [
  {
    name: 'percentile_sketch',
    overloads: [
      {
        parameters: [['x', 'DOUBLE']],
        body: `CAST({'format': '${percentileFormat}', 'n': count(x), 'min': min(x), 'max': max(x),
          'log_buckets': __orrery_dd_build(x)} AS ${percentileSketchType})`,
      },
    ],
  },
  {
    name: 'distinct_sketch',
    overloads: [
      {
        parameters: [['x']],
        body: `CAST({'format': '${distinctFormat}', 'hll_registers': __orrery_hll_build(CASE WHEN x IS NOT NULL THEN hash(x) END)}
          AS ${distinctSketchType})`,
      },
    ],
  },
  {
    name: 'merge',
    overloads: [
      {
        parameters: [['sketch', percentileSketchType]],
        body: `CASE ${checkFormats('merge', 'sketch', percentileFormat, 'percentile_sketch')}
          ELSE CAST({'format': '${percentileFormat}', 'n': coalesce(sum(sketch.n), 0), 'min': min(sketch.min), 'max': max(sketch.max),
          'log_buckets': __orrery_dd_union(sketch.log_buckets)}
          AS ${percentileSketchType}) END`,
      },
      {
        parameters: [['sketch', distinctSketchType]],
        body: `CASE ${checkFormats('merge', 'sketch', distinctFormat, 'distinct_sketch')}
          ELSE CAST({'format': '${distinctFormat}', 'hll_registers': __orrery_hll_union(sketch.hll_registers)}
          AS ${distinctSketchType}) END`,
      },
    ],
  },
  {
    name: 'percentile',
    overloads: [
      {
        // Untyped, cast in the body: the same casts typed parameters make (a sketch of the other
        // kind keeps only its format, refused by name), but percentile(merge(p), q) then binds with
        // the SQL definition of merge's union (see __orrery_dd_union).
        parameters: [['sketch'], ['q']],
        body: `list_transform([CAST(sketch AS ${percentileSketchType})], __s -> list_transform([CAST(q AS DOUBLE)], __q -> CASE
          WHEN __s IS NULL OR __q IS NULL THEN NULL
          ${checkFormat('percentile', '__s', percentileFormat, 'percentile_sketch')}
          WHEN NOT (__q >= 0 AND __q <= 1) THEN error('percentile(): q must be between 0 and 1, got ' || __q)
          WHEN __s.n = 0 THEN NULL
          ELSE __orrery_dd_rank(__s, greatest(1, __s.n - floor(__s.n - __s.n * __q)) - 1) END)[1])[1]`,
      },
    ],
  },
  {
    name: 'distinct_count',
    overloads: [
      {
        parameters: [['sketch', distinctSketchType]],
        body: `list_transform([sketch], __s -> CASE WHEN __s IS NULL THEN NULL
          ${checkFormat('distinct_count', '__s', distinctFormat, 'distinct_sketch')}
          ELSE __orrery_hll_estimate(__s.hll_registers) END)[1]`,
      },
    ],
  },
];

/**
 * The spec's first/last by time (TimescaleDB's): the value at the earliest or latest time, NULL
 * values included, rows without a time ignored. Only under `snouttime.`: DuckDB's own first and
 * last take one argument.
 */
const snouttimeOnly: readonly Macro[] = [
  { name: 'first', overloads: [{ parameters: [['value'], ['ts']], body: 'arg_min_null(value, ts)' }] },
  { name: 'last', overloads: [{ parameters: [['value'], ['ts']], body: 'arg_max_null(value, ts)' }] },
];

/** The catalog that holds the `snouttime.` names, so that `snouttime.percentile(p, 0.99)` runs as the spec writes it. */
export const snouttimeCatalog = 'snouttime';

const createMacro = (qualifiedName: string, macro: Macro): string =>
  `CREATE OR REPLACE MACRO ${qualifiedName} ${macro.overloads
    .map((o) => `(${o.parameters.map((p) => p.join(' ')).join(', ')}) AS ${o.body}`)
    .join(', ')}`;

/** Each `snouttime.` twin calls the macro of the search path, overload by overload. */
const twin = (macro: Macro): Macro => ({
  name: macro.name,
  overloads: macro.overloads.map((o) => ({
    parameters: o.parameters,
    body: `${macro.name}(${o.parameters.map(([name]) => name).join(', ')})`,
  })),
});

/** The functions the snouttime catalog answers itself; a `snouttime.` call of any other name is Orrery's to route. */
export const snouttimeCatalogFunctions: ReadonlySet<string> = new Set(
  [...sketchMacros, ...snouttimeOnly].map((m) => m.name),
);

/**
 * Statements creating the sketch functions and the `snouttime.` names; run once when an engine
 * starts. `native`: the engine registered the native aggregates (EngineOptions.nativeSketches).
 */
export const sketchStatements = (native: boolean): readonly string[] => [
  ...helpers,
  ...(native ? [] : sqlAggregates),
  ...sketchMacros.map((m) => createMacro(m.name, m)),
  `ATTACH ':memory:' AS ${snouttimeCatalog}`,
  ...sketchMacros.map((m) => createMacro(`${snouttimeCatalog}.main.${m.name}`, twin(m))),
  ...snouttimeOnly.map((m) => createMacro(`${snouttimeCatalog}.main.${m.name}`, m)),
];
