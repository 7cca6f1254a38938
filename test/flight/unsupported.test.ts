// What the server refuses as unsupported or malformed. (Who may run which statement: test/sql/permissions.test.)
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import protobuf from 'protobufjs';
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

  it('a malformed command, ticket or header is INVALID_ARGUMENT saying what is wrong, never INTERNAL (issue 9)', async () => {
    /** A google.protobuf.Any of a Flight SQL message whose body is these bytes. */
    const rawAny = (name: string, body: Uint8Array): Uint8Array =>
      protobuf.Writer.create()
        .uint32(10)
        .string(`type.googleapis.com/arrow.flight.protocol.sql.${name}`)
        .uint32(18)
        .bytes(body)
        .finish();
    /** A CommandStatementQuery whose query field (1) holds bytes that are not UTF-8. */
    const notUtf8 = protobuf.Writer.create()
      .uint32(10)
      .bytes(Buffer.from([0x53, 0x45, 0xff, 0xfe]))
      .finish();
    const truncated = new Uint8Array([0x0a, 0x05, 0x41]);
    await assert.rejects(admin.getFlightInfo(rawAny('CommandStatementQuery', truncated)), {
      code: 3,
      details: 'CommandStatementQuery: not a valid protobuf message (index out of range: 2 + 5 > 3)',
    });
    await assert.rejects(admin.getFlightInfo(rawAny('CommandStatementQuery', notUtf8)), {
      code: 3,
      details:
        'CommandStatementQuery: not a valid protobuf message (The encoded data was not valid for encoding utf-8)',
    });
    await assert.rejects(admin.doGet(rawAny('TicketStatementQuery', truncated)), {
      code: 3,
      details: /^TicketStatementQuery: not a valid protobuf message/,
    });
    await assert.rejects(
      admin.doAction('CreatePreparedStatement', rawAny('ActionCreatePreparedStatementRequest', truncated)),
      {
        code: 3,
        details: /^ActionCreatePreparedStatementRequest: not a valid protobuf message/,
      },
    );
    await assert.rejects(admin.doPut(rawAny('CommandStatementUpdate', truncated)), {
      code: 3,
      details: /^CommandStatementUpdate: not a valid protobuf message/,
    });
    await assert.rejects(admin.query('SELECT 1', { timestamp_zone: 'Mars' }), {
      code: 3,
      details: "header timestamp_zone: expected UTC or none, got 'Mars'",
    });
  });
});
