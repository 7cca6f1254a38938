// What the server refuses as unsupported. (Who may run which statement: test/sql/permissions.test.)
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { packAny, type TestFlightClient } from '../support/flight-client.js';
import { useOrrery } from '../support/orrery-process.js';

describe('unsupported features', () => {
  const fixture = useOrrery();
  let admin: TestFlightClient;
  before(() => {
    ({ admin } = fixture);
  });

  it('savepoints and Substrait are UNIMPLEMENTED, not UNKNOWN', async () => {
    await assert.rejects(admin.doAction('BeginSavepoint', packAny('ActionBeginSavepointRequest', { name: 's' })), {
      code: 12,
    });
    await assert.rejects(
      admin.getFlightInfo(
        packAny('CommandStatementSubstraitPlan', { plan: { plan: new Uint8Array([1]), version: '1' } }),
      ),
      { code: 12 },
    );
    // Issue 12: ingest is supported; one without an Arrow stream is the client's mistake.
    await assert.rejects(admin.doPut(packAny('CommandStatementIngest', { table: 'x' })), {
      code: 3,
      details: /no Arrow schema/,
    });
    await assert.rejects(admin.doAction('NoSuchAction', new Uint8Array(0)), {
      code: 12,
      details: /action 'NoSuchAction'/,
    });
  });
});
