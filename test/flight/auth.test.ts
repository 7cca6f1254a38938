// Flight SQL authentication over a real socket: Basic handshake, bearer keys, refusals.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TestFlightClient } from '../support/flight-client.js';
import { adminKey, readerKey, startTestOrrery } from '../support/orrery-process.js';

describe('authentication', () => {
  let orrery: Awaited<ReturnType<typeof startTestOrrery>>;
  before(async () => {
    orrery = await startTestOrrery();
  });
  after(() => orrery.close());

  const client = (): TestFlightClient => new TestFlightClient(orrery.address);

  it('answers a padded Basic handshake with a bearer token in the response headers', async () => {
    const c = client();
    assert.equal(await c.handshake(adminKey.name, adminKey.key), `Bearer ${adminKey.key}`);
    assert.equal((await c.query('SELECT 1 AS one')).getChild('one')?.get(0), 1);
    c.close();
  });

  it('accepts unpadded base64 in the Basic header', async () => {
    const c = client();
    assert.equal(await c.handshake(readerKey.name, readerKey.key, false), `Bearer ${readerKey.key}`);
    c.close();
  });

  it('refuses a wrong key with UNAUTHENTICATED', async () => {
    await assert.rejects(client().handshake(adminKey.name, 'wrong-key-0000'), { code: 16 });
  });

  it('refuses a right key under another name', async () => {
    await assert.rejects(client().handshake(readerKey.name, adminKey.key), {
      code: 16,
      details: 'invalid user name or key',
    });
  });

  it('refuses calls without credentials', async () => {
    await assert.rejects(client().query('SELECT 1'), { code: 16, details: /missing credentials/ });
  });

  it('accepts a bearer key on every call without a handshake', async () => {
    const c = client();
    c.headers.authorization = `Bearer ${readerKey.key}`;
    assert.equal((await c.query('SELECT 2 AS two')).getChild('two')?.get(0), 2);
    c.headers.authorization = 'Bearer not-a-key';
    await assert.rejects(c.query('SELECT 2'), { code: 16, details: 'invalid key' });
    c.headers.authorization = 'Token abc';
    await assert.rejects(c.query('SELECT 2'), { code: 16, details: /malformed authorization header/ });
    c.close();
  });
});
