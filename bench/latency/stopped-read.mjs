// A read in a client's transaction that its client stops early (the `limit` header): how long the server takes to
// end the statement, this tree's server against --base's, alternated (A B A B ...) on the same Postgres and lake
// (bench/catalog-probe.mjs). Issue 12: in a transaction the server cannot interrupt DuckDB (that would fail the
// transaction), so the statement ended only once the batch in flight was full (up to 2 MiB of rows); it now ends at
// DuckDB's next chunk. The statement's rows cost DuckDB --cost list elements each to compute.
//
//   node bench/latency/stopped-read.mjs --base <tree with dist/ built> [--repeats 21] [--cost 2000]
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { alternately, catalogProbe, loadAverage, median } from '../catalog-probe.mjs';

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    repeats: { type: 'string', default: '21' },
    cost: { type: 'string', default: '2000' },
  },
});
if (!values.base) throw new Error('--base <tree> is required: the server to compare with');
const root = fileURLToPath(new URL('../..', import.meta.url));
const { FlightSql, packAny, unpackAny } = await import(pathToFileURL(join(root, 'dist/src/wire/index.js')).href);

const probe = await catalogProbe(root, 'orrery-stopped-read-');
try {
  const servers = [
    { label: 'this', client: await probe.startServer(root, 'this') },
    { label: 'base', client: await probe.startServer(resolve(values.base), 'base') },
  ];
  const query = `SELECT list_sum(range(range % ${Number(values.cost)})) AS s FROM range(1000000000)`;
  const headers = { limit: '1' };
  const cases = servers.map(({ client }) => ({
    run: async () => {
      const [begun] = await client.doAction('BeginTransaction', packAny('ActionBeginTransactionRequest', {}));
      const { transactionId } = FlightSql.ActionBeginTransactionResult.decode(unpackAny(begun).value);
      const cmd = packAny('CommandStatementQuery', { query, transactionId });
      const info = await client.getFlightInfo(cmd, { headers });
      let rows = 0;
      for await (const batch of client.readTicket(info.endpoints[0].ticket, { headers })) rows += batch.numRows;
      if (rows !== 1) throw new Error(`${rows} rows read, not 1`);
      await client.doAction('EndTransaction', packAny('ActionEndTransactionRequest', { transactionId, action: 2 }));
    },
  }));
  await alternately(cases, 2); // warm-up
  const loadBefore = loadAverage();
  const [ours, theirs] = (await alternately(cases, Number(values.repeats))).map(median);
  console.log(
    `load average ${loadBefore} before timing, ${loadAverage()} after; medians of ${values.repeats}, alternated`,
  );
  console.log(`a transaction's read of 1 row (limit header) of ${query}, with BEGIN and ROLLBACK`);
  console.log(`this ${ours.toFixed(1)} ms, base ${theirs.toFixed(1)} ms, this / base ${(ours / theirs).toFixed(3)}`);
} finally {
  await probe.close();
}
