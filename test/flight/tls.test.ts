// TLS: with ORRERY_TLS_CERT/ORRERY_TLS_KEY set, Flight SQL is served over TLS only.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { serviceDefinition } from '../../src/wire/index.js';
import { adminKey, startTestOrrery } from '../support/orrery-process.js';
import { selfSignedCertificate, type TestCertificate } from '../support/tls.js';

describe('TLS', () => {
  let certificate: TestCertificate;
  let orrery: Awaited<ReturnType<typeof startTestOrrery>>;
  before(async () => {
    certificate = selfSignedCertificate('orrery-tls-');
    orrery = await startTestOrrery({ ORRERY_TLS_CERT: certificate.cert, ORRERY_TLS_KEY: certificate.key });
  });
  after(async () => {
    await orrery.close();
    certificate.remove();
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
    const deadline = new Date(Date.now() + 30_000);
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
    assert.ok((await listActions(grpc.credentials.createSsl(readFileSync(certificate.cert)))) >= 3);
  });

  it('does not answer plaintext', async () => {
    await assert.rejects(listActions(grpc.credentials.createInsecure()), { code: grpc.status.UNAVAILABLE });
  });
});
