// A client's Flight SQL transaction (BeginTransaction … EndTransaction), for the tests that read or write in one.
import type { Table } from 'apache-arrow';
import { FlightSql, packAny, unpackAny, type TestFlightClient } from './flight-client.js';

/** BeginTransaction: the new transaction's id. */
export async function beginTransaction(client: TestFlightClient): Promise<Uint8Array> {
  const [body] = await client.doAction('BeginTransaction', packAny('ActionBeginTransactionRequest', {}));
  return (
    FlightSql.ActionBeginTransactionResult.decode(unpackAny(body)!.value) as unknown as { transactionId: Uint8Array }
  ).transactionId;
}

/** EndTransaction: commits the transaction, or rolls it back. */
export async function endTransaction(
  client: TestFlightClient,
  transactionId: Uint8Array,
  commit: boolean,
): Promise<void> {
  await client.doAction(
    'EndTransaction',
    packAny('ActionEndTransactionRequest', { transactionId, action: commit ? 1 : 2 }),
  );
}

/** A query's result in the transaction. */
export async function queryInTransaction(
  client: TestFlightClient,
  transactionId: Uint8Array,
  query: string,
): Promise<Table> {
  const info = await client.getFlightInfo(packAny('CommandStatementQuery', { query, transactionId }));
  return (await client.doGet(info.endpoints[0].ticket)).table;
}

/**
 * What `query` reads in a transaction that ran `write` first (its own rows then in what it reads), rolled back
 * after: nothing of the write is left.
 */
export async function readAfterWrite(client: TestFlightClient, write: string, query: string): Promise<Table> {
  const transactionId = await beginTransaction(client);
  try {
    await client.doPut(packAny('CommandStatementUpdate', { query: write, transactionId }));
    return await queryInTransaction(client, transactionId, query);
  } finally {
    await endTransaction(client, transactionId, false);
  }
}
