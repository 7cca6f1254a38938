// Issue 13: refresh_rollup records each audience's error on the rollup's job (rollup_jobs.audience_errors,
// which snouttime.jobs tells each key for its own audiences) and writes the job's row only when they change:
// most refreshes fail for no audience, as the one before, and leave the row as it was. Whether a refresh
// wrote it is read from Postgres: a row's xmin names the transaction that last wrote it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { useOrrery } from '../support/orrery-process.js';

describe('refresh_rollup writes its audience errors only when they change (issue 13)', () => {
  const fixture = useOrrery();
  const job = async () =>
    (
      await fixture.orrery.metadata.query<{
        xmin: string;
        errors: Array<{ audience: string | null; error: string }> | null;
      }>(
        `SELECT xmin::text AS xmin, audience_errors AS errors FROM rollup_jobs WHERE kind = 'refresh' AND target = 'notes_hourly'`,
      )
    ).rows[0];
  const refresh = () => fixture.admin.query(`select snouttime.refresh_rollup('notes_hourly')`);

  it("records an audience's error, clears it, and leaves the job's row unwritten while they stay the same", async () => {
    await fixture.admin.query(`CREATE TABLE notes (ts TIMESTAMPTZ, note VARCHAR) WITH (time_column = 'ts')`);
    await fixture.admin.query(
      `INSERT INTO notes (ts, note, audience) VALUES ('2024-01-01 00:10:00+00', '7', 'team-a')`,
    );
    // The reader's rows are of its audience, public: a note that is no number fails the refresh's cast for it alone.
    await fixture.reader.query(`INSERT INTO notes VALUES ('2024-01-01 00:20:00+00', 'oops')`);
    await fixture.admin.query(
      `select snouttime.create_rollup('notes_hourly', 'notes', interval '1 hour', select_list => 'sum(CAST(note AS INTEGER)) AS total')`,
    );
    assert.equal((await job()).errors, null);
    await refresh();
    const failed = await job();
    assert.deepEqual(
      failed.errors?.map((e) => e.audience),
      ['public'],
    );
    const [{ error }] = failed.errors!;
    assert.match(error, /'oops'/);
    assert.deepEqual(await plainRows(fixture.reader, `SELECT last_error FROM snouttime.jobs`), [
      { last_error: `audience public: ${error}` },
    ]);
    // The same error again: the row is not written.
    await refresh();
    assert.equal((await job()).xmin, failed.xmin);
    await fixture.admin.query(`DELETE FROM notes WHERE note = 'oops'`);
    await refresh();
    const cleared = await job();
    assert.equal(cleared.errors, null);
    assert.notEqual(cleared.xmin, failed.xmin);
    // None again (NULL stays NULL): not written.
    await refresh();
    assert.equal((await job()).xmin, cleared.xmin);
  });
});
