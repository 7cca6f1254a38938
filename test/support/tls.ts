import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A self-signed certificate for 127.0.0.1 and localhost, valid a day, in a folder of its own. */
export interface TestCertificate {
  readonly cert: string;
  readonly key: string;
  /** Deletes the folder (idempotent). */
  remove(): void;
}

export function selfSignedCertificate(prefix: string): TestCertificate {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
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
  return { cert, key, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
