// Issue 8 item 7: an Orrery closes every role once (close is idempotent, `await using` closes it), and a
// closed part refuses work with a named error instead of starting again.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startRole, startTestPostgres, sharedEnv, type TestPostgres } from './lakehouse-fixtures.js';

const admin = { name: 'admin', key: 'admin-key-0123', audiences: ['public'] };

describe('shutdown (issue 8)', () => {
  let postgres: TestPostgres;
  before(async () => {
    postgres = await startTestPostgres();
  });
  after(() => postgres.close());

  it('closes at the end of an `await using` block; the closed daemon refuses to start again', async () => {
    let daemon;
    {
      await using orrery = await startRole(
        'all',
        sharedEnv({ keys: [admin], admins: [admin.name], connectionString: postgres.connectionString }),
      );
      daemon = orrery.daemon!;
      const health = await fetch(`http://127.0.0.1:${orrery.httpPort}/health`);
      assert.equal(health.status, 200);
    }
    assert.throws(() => daemon.start(), {
      code: 'DAEMON_CLOSED',
      status: 'UNAVAILABLE',
      message: 'the maintenance daemon has been closed',
    });
  });

  it('close is idempotent: a second call resolves without closing anything twice', async () => {
    const orrery = await startRole(
      'serve',
      sharedEnv({ keys: [admin], admins: [admin.name], connectionString: postgres.connectionString }),
    );
    const port = orrery.httpPort;
    await orrery.close();
    await orrery.close();
    await assert.rejects(fetch(`http://127.0.0.1:${port}/health`), /fetch failed/);
    assert.deepEqual(
      orrery.lines.filter((line) => line.startsWith('error')),
      [],
    );
  });
});
