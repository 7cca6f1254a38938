// TLS: with ORRERY_TLS_CERT/ORRERY_TLS_KEY set, Flight SQL is served over TLS only.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { serviceDefinition } from '../../src/wire/index.js';
import { adminKey, startTestOrrery } from '../support/orrery-process.js';

describe('TLS', () => {
  const dir = mkdtempSync(join(tmpdir(), 'orrery-tls-'));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  let orrery: Awaited<ReturnType<typeof startTestOrrery>>;
  before(async () => {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=IP:127.0.0.1,DNS:localhost',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: 'ignore' },
    );
    orrery = await startTestOrrery({ ORRERY_TLS_CERT: cert, ORRERY_TLS_KEY: key });
  });
  after(async () => {
    await orrery.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const listActions = (credentials: grpc.ChannelCredentials): Promise<number> => {
    const Client = grpc.makeGenericClientConstructor(serviceDefinition, 'FlightService');
    const client = new Client(orrery.address, credentials) as unknown as Record<
      string,
      (...args: unknown[]) => unknown
    > &
      grpc.Client;
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${adminKey.key}`);
    const deadline = new Date(Date.now() + 3000);
    const call = client.ListActions({}, metadata, { deadline }) as grpc.ClientReadableStream<unknown>;
    return new Promise((resolve, reject) => {
      let count = 0;
      call.on('data', () => count++);
      call.on('end', () => {
        client.close();
        resolve(count);
      });
      call.on('error', (error) => {
        client.close();
        reject(error);
      });
    });
  };

  it('answers a client that trusts the certificate', async () => {
    assert.ok((await listActions(grpc.credentials.createSsl(readFileSync(cert)))) >= 3);
  });

  it('does not answer plaintext', async () => {
    await assert.rejects(listActions(grpc.credentials.createInsecure()), { code: grpc.status.UNAVAILABLE });
  });
});
