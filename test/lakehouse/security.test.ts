// Security rules users rely on: identity from the key alone, server-stamped audiences, and admin rights
// only where configured. (Audience filtering and deny rules as SQL cases: test/sql/audiences.test,
// test/sql/deny-rules.test.)
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { adminKey, readerKey, startTestOrrery, useOrrery } from '../support/orrery-process.js';
import { TestFlightClient, packAny } from '../support/flight-client.js';

const teamKey = { name: 'team_x', key: 'team-x-key-0123' };
const keys = JSON.stringify([adminKey, { ...readerKey, audiences: ['public'] }, { ...teamKey, audiences: ['team_x'] }]);
const count = async (c: TestFlightClient, sql: string, headers?: Record<string, string>): Promise<number> =>
  Number((await c.query(sql, headers)).getChildAt(0)!.get(0));

describe('security', () => {
  const fixture = useOrrery({ MICROMEGAS_API_KEYS: keys, ORRERY_RETIRE_DELAY_SECONDS: '0' }, 'serve');
  let admin: TestFlightClient;
  let reader: TestFlightClient;
  let range: string;

  before(async () => {
    ({ admin, reader } = fixture);
    const port = fixture.orrery.httpPort;
    const logs = [{ time: 1704164645000000000n, severity: 9, body: 'hello' }];
    // A client naming an audience in its resource does not choose it: the key does.
    const spoof = logsRequest({ 'service.name': 'spoofer', 'micromegas.audience': 'team_x', audience: 'team_x' }, logs);
    assert.equal((await postOtlp(port, 'logs', readerKey.key, spoof)).status, 200);
    assert.equal(
      (await postOtlp(port, 'logs', teamKey.key, logsRequest({ 'service.name': 'team' }, logs))).status,
      200,
    );
    const now = Math.floor(Date.now() / 1000);
    const begin = new Date((Math.floor(now / 60) * 60 - 60) * 1000).toISOString();
    const end = new Date((Math.floor(now / 60) * 60 + 120) * 1000).toISOString();
    range = `'${begin}', '${end}', 180`;
    for (const view of ['processes', 'log_entries'])
      await admin.query(`SELECT * FROM materialize_partitions('${view}', ${range})`);
  });

  it('stamps the audience from the key, and drops micromegas.* resource attributes', async () => {
    const table = await admin.query("SELECT audience, properties FROM processes WHERE exe = 'spoofer'");
    assert.equal(table.getChild('audience')!.get(0), 'public');
    assert.deepEqual(JSON.parse(String(table.getChild('properties')!.get(0))), {
      'service.name': 'spoofer',
      audience: 'team_x',
    });
  });

  it('takes identity from the key alone: identity, admin and audience headers are ignored', async () => {
    const headers = { 'x-auth-is-admin': 'true', audience: 'team_x', 'x-user': 'admin', 'x-audiences': 'team_x' };
    assert.equal(await count(reader, 'SELECT count(*) FROM log_entries', headers), 1);
    assert.equal(await count(reader, "SELECT count(*) FROM log_entries WHERE audience = 'team_x'", headers), 0);
    await assert.rejects(reader.query(`SELECT * FROM materialize_partitions('log_entries', ${range})`, headers), {
      code: 7,
    });
    assert.equal(await count(admin, 'SELECT count(*) FROM log_entries'), 2);
  });

  it('issue 10: the plan a ticket names serves only the key and headers that made it, once', async () => {
    const team = new TestFlightClient(fixture.orrery.address);
    team.headers.authorization = `Bearer ${teamKey.key}`;
    try {
      const sql = 'SELECT count(*) FROM log_entries';
      const cmd = packAny('CommandStatementQuery', { query: sql });
      const countOf = async (c: TestFlightClient, ticket: Uint8Array, headers?: Record<string, string>) =>
        Number((await c.doGet(ticket, headers)).table.getChildAt(0)!.get(0));
      // team_x's plan reads team_x's rows and public's; the reader redeeming its ticket reads public's only.
      const [teamTicket] = (await team.getFlightInfo(cmd)).endpoints.map((e) => e.ticket);
      assert.equal(await countOf(reader, teamTicket), 1);
      assert.equal(await countOf(team, teamTicket), 2);
      assert.equal(await countOf(team, teamTicket), 2, 'a ticket redeemed again is planned again');
      // Headers sent with DoGet are the ones that count: a time range there is honoured.
      const [ticket] = (await team.getFlightInfo(cmd)).endpoints.map((e) => e.ticket);
      assert.equal(await countOf(team, ticket, { query_range_begin: '2100-01-01T00:00:00Z' }), 0);
      const [adminTicket] = (await admin.getFlightInfo(cmd)).endpoints.map((e) => e.ticket);
      assert.equal(await countOf(team, adminTicket), 2);
      assert.equal(await countOf(reader, adminTicket), 1);
    } finally {
      team.close();
    }
  });

  it("issue 10: a prepared statement's plan serves the GetFlightInfo of the key that prepared it only", async () => {
    const team = new TestFlightClient(fixture.orrery.address);
    team.headers.authorization = `Bearer ${teamKey.key}`;
    try {
      const sql = 'SELECT count(*) FROM log_entries';
      const countThrough = async (c: TestFlightClient, handle: Uint8Array, headers?: Record<string, string>) => {
        const info = await c.getFlightInfo(
          packAny('CommandPreparedStatementQuery', { preparedStatementHandle: handle }),
          headers,
        );
        return Number((await c.doGet(info.endpoints[0].ticket, headers)).table.getChildAt(0)!.get(0));
      };
      // team_x prepares (its plan kept for its GetFlightInfo); the reader executing the same handle
      // first is planned as itself: public's rows only. Then team_x's own execution reads both.
      const { handle } = await team.prepare(sql);
      assert.equal(await countThrough(reader, handle), 1);
      assert.equal(await countThrough(team, handle), 2);
      // The reader prepares; team_x's execution with other headers (a time range) is planned again.
      const { handle: readerHandle } = await reader.prepare(sql);
      assert.equal(await countThrough(team, readerHandle, { query_range_begin: '2100-01-01T00:00:00Z' }), 0);
      assert.equal(await countThrough(team, readerHandle), 2);
      assert.equal(await countThrough(reader, readerHandle), 1);
    } finally {
      team.close();
    }
  });
});

describe('keys without admins', () => {
  it('refuses admin statements to every key when MICROMEGAS_ADMINS names none', async () => {
    const orrery = await startTestOrrery({ MICROMEGAS_API_KEYS: keys, MICROMEGAS_ADMINS: '' }, 'serve');
    const client = new TestFlightClient(orrery.address);
    client.headers.authorization = `Bearer ${adminKey.key}`;
    try {
      await assert.rejects(client.query('SELECT * FROM retire_incompatible_partitions()'), { code: 7 });
      await assert.rejects(client.updateCount('CREATE TABLE t (a INT)'), { code: 7 });
      assert.equal(await count(client, 'SELECT 1'), 1);
    } finally {
      client.close();
      await orrery.close();
    }
  });
});
