// The kept tables of a rollup's stored rows an in-process server starts making (in the background) while a test
// works, to await them: a test waits on the making itself instead of a time.
import { DuckDBEngine } from '../../src/engine/index.js';
import { Rollups } from '../../src/rollups/index.js';

/**
 * The makings of kept tables of stored rows `work` starts (Rollups.keptTable, wrapped on its prototype meanwhile).
 * Each settles with the table kept, or null when none is (too large, over the budget, failed).
 */
export async function storedMakingsDuring(work: () => Promise<unknown>): Promise<Array<Promise<string | null>>> {
  const keptTable = Object.getOwnPropertyDescriptor(Rollups.prototype, 'keptTable')!.value as (
    ...args: unknown[]
  ) => Promise<string | null>;
  const makings: Array<Promise<string | null>> = [];
  const watched = function (this: Rollups, ...args: unknown[]): Promise<string | null> {
    const making = keptTable.apply(this, args);
    makings.push(making);
    return making;
  };
  Object.defineProperty(Rollups.prototype, 'keptTable', { configurable: true, writable: true, value: watched });
  try {
    await work();
  } finally {
    Object.defineProperty(Rollups.prototype, 'keptTable', { configurable: true, writable: true, value: keptTable });
  }
  return makings;
}

/**
 * Settles once kept table `table` (`<db>.main.<db>`) was dropped (its database detached, then forgotten by the engine:
 * DuckDBEngine.forgetTailRing, wrapped on its prototype until then).
 */
export function keptDropped(table: string): Promise<void> {
  const database = table.slice(0, table.indexOf('.'));
  const forget = Object.getOwnPropertyDescriptor(DuckDBEngine.prototype, 'forgetTailRing')!.value as (
    this: DuckDBEngine,
    ring: string,
  ) => void;
  return new Promise((resolve) => {
    const watched = function (this: DuckDBEngine, ring: string): void {
      forget.call(this, ring);
      if (ring !== database) return;
      Object.defineProperty(DuckDBEngine.prototype, 'forgetTailRing', {
        configurable: true,
        writable: true,
        value: forget,
      });
      resolve();
    };
    Object.defineProperty(DuckDBEngine.prototype, 'forgetTailRing', {
      configurable: true,
      writable: true,
      value: watched,
    });
  });
}
