// Admission of OTLP requests under overload: a bounded number of requests and of body bytes in the
// server at once, and a share of each per key, so that a flood is refused (OTLP's retryable 429/503 with
// Retry-After) instead of queueing without bound, and one key's flood leaves room for the others.
import { OtlpDecodeError } from './otlp/index.js';

export interface IngestLimits {
  /** Requests being read, checked or stored at once, all keys together (more: 503). */
  readonly concurrent: number;
  /** Requests of one key at once (more: 429). */
  readonly concurrentPerKey: number;
  /** Decoded body bytes held at once, all keys together (more: 503); one key may hold half of it (more: 429). */
  readonly memoryBytes: number;
}

/** Seconds a refused client is told to wait (Retry-After): the time a request of the load takes to clear. */
export const RETRY_AFTER_SECONDS = 1;

const throttled = (message: string): OtlpDecodeError => new OtlpDecodeError('OTLP_THROTTLED', message);
const overloaded = (message: string): OtlpDecodeError => new OtlpDecodeError('OTLP_OVERLOADED', message);

/** The request slots and bytes one admitted request holds; `release` gives them back (idempotent). */
export interface Admitted {
  /** Counts `bytes` more of the body; throws OTLP_THROTTLED or OTLP_OVERLOADED when over a budget. */
  readonly charge: (bytes: number) => void;
  readonly release: () => void;
}

/** The counters of requests and bytes in flight, in total and per key. */
export class IngestAdmission {
  private running = 0;
  private bytes = 0;
  private readonly perKey = new Map<string, { running: number; bytes: number }>();

  constructor(private readonly limits: IngestLimits) {}

  /** Admits one request of `key`, or throws OTLP_THROTTLED (the key's share is used) or OTLP_OVERLOADED. */
  admit(key: string): Admitted {
    const mine = this.perKey.get(key) ?? { running: 0, bytes: 0 };
    if (mine.running >= this.limits.concurrentPerKey)
      throw throttled(`this key already has ${mine.running} requests in progress; retry later`);
    if (this.running >= this.limits.concurrent)
      throw overloaded(`the server is ingesting ${this.running} requests; retry later`);
    mine.running++;
    this.running++;
    this.perKey.set(key, mine);
    let held = 0;
    let released = false;
    return {
      charge: (bytes: number): void => {
        if (this.bytes + bytes > this.limits.memoryBytes)
          throw overloaded(`the server holds ${this.bytes} bytes of requests in progress; retry later`);
        if (mine.bytes + bytes > this.limits.memoryBytes / 2)
          throw throttled(`this key's requests in progress hold ${mine.bytes} bytes; retry later`);
        held += bytes;
        mine.bytes += bytes;
        this.bytes += bytes;
      },
      release: (): void => {
        if (released) return;
        released = true;
        this.running--;
        this.bytes -= held;
        mine.running--;
        mine.bytes -= held;
        if (mine.running === 0) this.perKey.delete(key);
      },
    };
  }
}
