// Each OTLP logs payload's first time as the materializer takes it from its block, for the tests that write
// partitions from payloads themselves (otlp-logs-ordered, otlp-logs-native-writer).
import { nativeLogsScan } from '../../src/engine/index.js';

/**
 * Each payload's records' earliest time as ingestion's validating scan finds it (11 numbers per ResourceLogs, the
 * records' count 7th, then that time's high and low 32-bit halves), 0 for a payload without records.
 */
export const firstTimes = (payloads: readonly Uint8Array[]): bigint[] =>
  payloads.map((p) => {
    const scanned = nativeLogsScan()!(p)!;
    let first = 0n;
    for (let at = 0; at < scanned.length; at += 11) {
      if (scanned[at + 6] === 0) continue;
      const time = (BigInt(scanned[at + 7]) << 32n) | BigInt(scanned[at + 8]);
      if (first === 0n || time < first) first = time;
    }
    return first;
  });
