// Issue 14: window bounds written with the clock in month-based intervals and calendar truncations
// (`now() - INTERVAL '1 month'`, `date_trunc('day', now())`) are worked out without DuckDB. Each is compared
// with DuckDB's own value over many instants (month ends, leap days, year ends, midnights, microseconds before
// them, and instants spread over 1990-2150), with now() as Orrery defines it (views/sql-functions.ts: DuckDB's
// now() cast to TIMESTAMP_NS, the type a statement's fixed clock has too) and the current date as its UTC date;
// forms it does not work out are left to DuckDB (null).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuckDBEngine } from '../../src/engine/index.js';
import { clockBoundText } from '../../src/rollups/index.js';

const bounds = [
  "now() - INTERVAL '1 month'",
  'now() - INTERVAL 1 MONTH',
  "now() + INTERVAL '1 month'",
  "now() - INTERVAL '3 months'",
  "now() - INTERVAL '1 mon'",
  "now() - INTERVAL '13 months'",
  "now() - INTERVAL '1 year'",
  'now() - INTERVAL 2 YEAR',
  'now() - INTERVAL 1 QUARTER',
  "now() - INTERVAL '1 year 2 months'",
  "now() - INTERVAL '1 month 1 day'",
  "now() + INTERVAL '1 month 1 day'",
  "now() - INTERVAL '1 month 2 hours'",
  "now() - INTERVAL '-1 month'",
  "now() - INTERVAL '7 days'",
  'now() - INTERVAL 1 WEEK',
  "now() - INTERVAL '36 hours'",
  "INTERVAL '1 month' + now()",
  "now() - (INTERVAL '1 month' + INTERVAL '1 day')",
  "now() - INTERVAL '1 month' - INTERVAL '1 day'",
  'current_timestamp - INTERVAL 1 MONTH',
  "date_trunc('day', now())",
  "date_trunc('hour', now())",
  "date_trunc('minute', now())",
  "date_trunc('week', now())",
  "date_trunc('month', now())",
  "date_trunc('quarter', now())",
  "date_trunc('year', now())",
  "date_trunc('day', now()) - INTERVAL 1 DAY",
  "date_trunc('month', now()) - INTERVAL '1 month'",
  "date_trunc('month', now() - INTERVAL '1 month')",
  "date_trunc('week', now()) - INTERVAL '2 weeks'",
  'now()::DATE',
  'CAST(now() AS DATE) - 7',
  "now()::DATE - INTERVAL '1 month'",
  "date_trunc('day', now()) + INTERVAL '1 month' - INTERVAL '1 day'",
  // The current date (DuckDB's, in the engine's UTC: compared here as the clock's date).
  'current_date',
  'current_date - 7',
  "current_date - INTERVAL '1 month'",
  "date_trunc('month', current_date)",
  "date_trunc('week', current_date) - INTERVAL '2 weeks'",
  'today() - 1',
  'current_date()',
  // Decimal numbers of days and time units.
  "now() - INTERVAL '1.5 hours'",
  "now() - INTERVAL '1.5 days'",
  "now() - INTERVAL '0.5 weeks'",
  "now() - INTERVAL '-1.5 days'",
  "now() - INTERVAL '0.333333 days'",
  "now() - INTERVAL '1.5 day 2.25 minutes'",
  "date_trunc('day', now()) - INTERVAL '10.5 millisecond'",
  "now() - INTERVAL '1 month 1.5 days'",
  // ago(x) read as now() - CAST(x AS INTERVAL) (agoAsClock): an interval cast to INTERVAL.
  'now() - CAST(INTERVAL 1 MONTH AS INTERVAL)',
  'now() - CAST(INTERVAL 5 HOUR AS INTERVAL)',
  "date_trunc('day', now() - CAST(INTERVAL '1 day 90 minutes' AS INTERVAL))",
];

/** Bounds DuckDB evaluates: a fraction of a month, another function, a text interval form. */
const leftToDuckDB = [
  "now() - INTERVAL '1.5 months'",
  "now() - INTERVAL '1.1 months'",
  "now() - INTERVAL '0.1 years'",
  // Not whole microseconds: DuckDB rounds them.
  "now() - INTERVAL '1.0000005 seconds'",
  "now() - INTERVAL '0.0000001 days'",
  // More than six digits of a fraction: DuckDB reads six.
  "now() - INTERVAL '0.3333333 days'",
  'now() - to_months(CAST(random() * 0 AS INTEGER))',
  "now() - INTERVAL '1 day 02:00:00'",
  "date_trunc('decade', now())",
  "now() - INTERVAL '300 years'",
  // DuckDB's own now(), a TIMESTAMPTZ: its arithmetic (ICU's) differs from TIMESTAMP_NS's.
  "system.main.now() - INTERVAL '1 month 2 hours'",
];

function instants(): string[] {
  const out: string[] = [];
  const text = (ms: number, micros = 0): string =>
    `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')}.${String((ms % 1000) * 1000 + micros).padStart(6, '0')}`;
  for (const year of [2023, 2024, 2100])
    for (let month = 0; month < 12; month++)
      for (const day of [1, 15, 28, 29, 30, 31]) {
        const ms = Date.UTC(year, month, day);
        if (new Date(ms).getUTCMonth() !== month) continue;
        out.push(text(ms), text(ms + 13 * 3_600_000 + 7_000 + 123), text(ms + 86_400_000 - 1, 999));
      }
  // Spread over 1990-2150 by a fixed step (no randomness: a failure names its instant).
  for (let ms = Date.UTC(1990, 0, 1, 3, 4, 5); ms < Date.UTC(2150, 0, 1); ms += 151 * 86_400_000 + 3_723_456)
    out.push(text(ms, 321));
  return out;
}

describe('window bounds written with the clock (issue 14)', () => {
  it("equal DuckDB's values over many instants", async () => {
    await using engine = await DuckDBEngine.create({ threads: 1 });
    const at = instants();
    const written = await engine.parseSelect(`SELECT ${bounds.map((b) => `CAST((${b}) AS TIMESTAMP_NS)`).join(', ')}`);
    const items = (written!.statements[0].node as { select_list: Array<Record<string, unknown>> }).select_list;
    let compared = 0;
    for (let first = 0; first < at.length; first += 100) {
      // DuckDB's values of every bound at 100 instants, in one statement.
      const batch = at.slice(first, first + 100);
      const [expected] = await engine.values(
        `SELECT ${batch
          .flatMap((instant) => {
            const clock = `CAST(TIMESTAMPTZ '${instant}+00' AS TIMESTAMP_NS)`;
            return bounds.map(
              (b) =>
                `CAST(CAST((${b
                  .replace(/current_date\(\)|current_date|today\(\)/g, `CAST(${clock} AS DATE)`)
                  .replace(/now\(\)|current_timestamp/g, clock)}) AS TIMESTAMP_NS) AS VARCHAR)`,
            );
          })
          .join(', ')}`,
      );
      for (const [k, instant] of batch.entries()) {
        const [date, time] = instant.split(' ');
        const nanos = BigInt(Date.parse(`${date}T${time.slice(0, 8)}Z`)) * 1_000_000n + BigInt(time.slice(9)) * 1000n;
        for (const [i, item] of items.entries()) {
          const duckdb = expected[k * bounds.length + i];
          assert.equal(clockBoundText(item, nanos), duckdb, `${bounds[i]} at ${instant}`);
          compared++;
        }
      }
    }
    assert.equal(compared, at.length * bounds.length);
  });

  it('leaves other forms to DuckDB', async () => {
    await using engine = await DuckDBEngine.create({ threads: 1 });
    const written = await engine.parseSelect(
      `SELECT ${leftToDuckDB.map((b) => `CAST((${b}) AS TIMESTAMP_NS)`).join(', ')}`,
    );
    const items = (written!.statements[0].node as { select_list: Array<Record<string, unknown>> }).select_list;
    const now = BigInt(Date.UTC(2024, 2, 31, 12)) * 1_000_000n;
    assert.deepEqual(
      items.map((item) => clockBoundText(item, now)),
      leftToDuckDB.map(() => null),
    );
  });
});
