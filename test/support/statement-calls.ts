// Statements and calls the query-limit suites share: a statement that never ends on its own, DoGet of
// the SQL text, and the FlightClientError of a call expected to fail.
import assert from 'node:assert/strict';
import { FlightClientError, type FlightSqlClient } from '../../src/client/index.js';

/** A cross join of 10^16 pairs: hours of DuckDB work, a few bytes of answer. */
export const hugeCrossJoin = 'SELECT count(*) FROM range(100000000) a, range(100000000) b WHERE a.range + b.range < 0';

/** DoGet with the SQL text as the ticket (one call per statement, as micromegas clients send them). */
export async function doGetSql(client: FlightSqlClient, sql: string, deadline?: number): Promise<void> {
  for await (const _ of client.doGet(new TextEncoder().encode(sql), { deadline }));
}

/** The error a call fails with; fails the test when it succeeds or fails with anything else. */
export async function failure(promise: Promise<unknown>): Promise<FlightClientError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof FlightClientError) return error;
    throw error;
  }
  assert.fail('expected the call to fail');
}
