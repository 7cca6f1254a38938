// What reading a relation reads below it, for deny rules (issue 13): a rule closing a view set or series table
// closes every relation whose rows are made of its rows, whatever name the statement reads them under.
import { instanceView } from '../views/index.js';
import type { Lakehouse } from './lakehouse-session.js';

/**
 * By a relation's name (lower case), the relations its rows are made of, all the way down, lower case: for a
 * rollup (its view, its materialized table, a stable name of one), the rollups it is made from and the view set
 * or series table below (Rollups.sources); for a view set defined in SQL (CREATE MATERIALIZED VIEW, log_stats),
 * the view sets its extract query reads; for a per-instance set (thread_spans, ...), spans. Nothing for others.
 * One catalog read for every name asked.
 */
export async function relationSources(lakehouse: Lakehouse | undefined): Promise<(name: string) => string[]> {
  const rollups = (await lakehouse?.rollups?.sources()) ?? (() => []);
  const below = (name: string): string[] => {
    const view = lakehouse?.views.get(name);
    const extract = view?.source.kind === 'sql' ? view.source.extractReads.map((r) => r.toLowerCase()) : [];
    return [...rollups(name), ...extract, ...(instanceView(name) ? ['spans'] : [])];
  };
  return (name) => {
    const found = new Set<string>();
    const pending = below(name);
    for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
      if (next === name || found.has(next)) continue;
      found.add(next);
      pending.push(...below(next));
    }
    return [...found];
  };
}
