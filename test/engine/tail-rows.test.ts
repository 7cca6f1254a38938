// The native addon's __orrery_tail_row (src/engine/native/tail-rows.cc) on real DuckDB instances: the row of a
// rollup's ring of kept tails a connection's next statement reads. A server runs several instances in one
// process (the query engine, the heavy lane's, the maintenance one), and DuckDB numbers each instance's
// connections alike (2, 3, ...), so what one is told must not be another's.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { connectionHandle, nativeTailRows } from '../../src/engine/native-export.js';

const native = nativeTailRows()!;

async function anInstance(): Promise<{ instance: DuckDBInstance; number: number; connection: DuckDBConnection }> {
  const instance = await DuckDBInstance.create(':memory:');
  const setup = await instance.connect();
  const number = native.registerTailRowFunction(connectionHandle(setup));
  setup.closeSync();
  return { instance, number, connection: await instance.connect() };
}

const connectionId = async (connection: DuckDBConnection): Promise<unknown> =>
  (await connection.runAndReadAll('SELECT current_connection_id()')).getRows()[0][0];

const rowRead = async (connection: DuckDBConnection, ring: string): Promise<unknown> =>
  (await connection.runAndReadAll(`SELECT __orrery_tail_row('${ring}')`)).getRows()[0][0];

describe('__orrery_tail_row: the kept tail row a connection is told (issue 17)', () => {
  it('a connection of one DuckDB instance reads what it was told, whatever the same-numbered connection of another instance is told or closes', async () => {
    const a = await anInstance();
    const b = await anInstance();
    try {
      assert.notEqual(a.number, b.number);
      assert.equal(
        await connectionId(a.connection),
        await connectionId(b.connection),
        'the instances number connections alike',
      );
      native.tailRingMade('tail_rows_ring_a');
      native.tailRingMade('tail_rows_ring_b');
      native.setTailReads(connectionHandle(a.connection), a.number, ['tail_rows_ring_a'], [7]);
      native.setTailReads(connectionHandle(b.connection), b.number, ['tail_rows_ring_b'], [9]);
      assert.equal(await rowRead(a.connection, 'tail_rows_ring_a'), 7n);
      assert.equal(await rowRead(b.connection, 'tail_rows_ring_b'), 9n);
      native.forgetTailReads(connectionHandle(b.connection), b.number);
      assert.equal(await rowRead(a.connection, 'tail_rows_ring_a'), 7n);
      await assert.rejects(rowRead(b.connection, 'tail_rows_ring_b'), /kept tail tail_rows_ring_b is gone/);
      native.tailRowGone('tail_rows_ring_a', 7);
      await assert.rejects(rowRead(a.connection, 'tail_rows_ring_a'), /kept tail tail_rows_ring_a is gone/);
    } finally {
      for (const { instance, connection } of [a, b]) {
        connection.closeSync();
        instance.closeSync();
      }
      native.forgetTailRing('tail_rows_ring_a');
      native.forgetTailRing('tail_rows_ring_b');
    }
  });

  it('a run reads a ring made and not yet dropped only: a run still in a dropped ring is not told a row it may no longer see', async () => {
    const a = await anInstance();
    try {
      native.setTailReads(connectionHandle(a.connection), a.number, ['tail_rows_ring_c'], [3]);
      await assert.rejects(rowRead(a.connection, 'tail_rows_ring_c'), /kept tail tail_rows_ring_c is gone/);
      native.tailRingMade('tail_rows_ring_c');
      assert.equal(await rowRead(a.connection, 'tail_rows_ring_c'), 3n);
      // Dropped: what was told gone of it is forgotten, and a run that began in it before its DETACH may have missed
      // a deleted row (row 3 here, never told gone): it fails rather than read no rows.
      native.forgetTailRing('tail_rows_ring_c');
      await assert.rejects(rowRead(a.connection, 'tail_rows_ring_c'), /kept tail tail_rows_ring_c is gone/);
    } finally {
      a.connection.closeSync();
      a.instance.closeSync();
    }
  });

  // DuckDB read a closed connection's id through a null pointer, ending the process (s21-review2's G4).
  it('a connection closed already is refused with a TypeError', async () => {
    const a = await anInstance();
    try {
      a.connection.closeSync();
      const handle = connectionHandle(a.connection);
      assert.throws(() => native.setTailReads(handle, a.number, [], []), {
        name: 'TypeError',
        message: 'the DuckDB connection is closed',
      });
      assert.throws(() => native.forgetTailReads(handle, a.number), {
        name: 'TypeError',
        message: 'the DuckDB connection is closed',
      });
    } finally {
      a.instance.closeSync();
    }
  });
});
