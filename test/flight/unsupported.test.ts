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

  it('transactions, Substrait and ingest are UNIMPLEMENTED, not UNKNOWN', async () => {
    await assert.rejects(admin.doAction('BeginTransaction', packAny('ActionBeginTransactionRequest', {})), { code: 12 });
    await assert.rejects(
      admin.getFlightInfo(packAny('CommandStatementSubstraitPlan', { plan: { plan: new Uint8Array([1]), version: '1' } })),
      { code: 12 },
    );
    await assert.rejects(admin.doPut(packAny('CommandStatementIngest', { table: 'x' })), { code: 12 });
    await assert.rejects(admin.doAction('NoSuchAction', new Uint8Array(0)), { code: 12, details: /action 'NoSuchAction'/ });
  });
});
