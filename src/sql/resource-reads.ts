// One statement's readers of installed resources (issue 13): pruning by indexes, projections, stored
// columns, set up alike for a statement that runs and one explain_resources explains.
import type { Provenance } from '../rollups/index.js';
import type { ViewSet } from '../views/index.js';
import type { PartitionFilter } from './lakehouse-session.js';
import { PartitionPruning, type PrunedPartition, type ProjectionRead, type Statement } from './partition-pruning.js';
import { StoredColumnReads, type StoredColumnUse } from './stored-column-reads.js';

/** What explain_resources tells of a statement: its rollups' provenance and, to admins, its other resources. */
export interface ExplainedReads extends Provenance {
  readonly stored_columns: readonly StoredColumnUse[];
  readonly pruned: readonly PrunedPartition[];
  readonly projections: readonly ProjectionRead[];
  /** The partitions a bounded latest-n read leaves out of its first run (see TopNBound). */
  readonly bounded: ReadonlyArray<{ readonly table: string; readonly partition: string }>;
}

/** The readers of one statement, and the filter that hands them each set's partition files. */
export function resourceReaders(statement: Statement): {
  pruning: PartitionPruning;
  stored: StoredColumnReads;
  filter: PartitionFilter;
} {
  const pruning = new PartitionPruning(statement);
  const stored = new StoredColumnReads(statement);
  const filter: PartitionFilter = {
    keep: (view, partitions) => pruning.keep(view, partitions),
    storedColumns: (view: ViewSet, files: readonly string[]) => stored.read(view, files),
    projected: (view: ViewSet, files: readonly string[]) => pruning.projected(view, files),
    newest: (view, partitions) => pruning.newest(view, partitions),
    rows: (file) => pruning.rows.get(file),
    read: (rows) => (pruning.partitionRows += rows),
  };
  return { pruning, stored, filter };
}
