// What a DuckDB statement's result schema becomes for the client: names as DataFusion gives them, the provenance in
// its metadata. Each is made once per described schema (derivedSchema), so the wire encoding kept per Schema object
// is not made again for each statement (#10).
import { Field, Schema } from 'apache-arrow';
import { derivedSchema } from '../arrow/index.js';
import type { StatementDescription } from '../engine/index.js';
import type { Provenance } from '../rollups/index.js';
import type { PartitionsRead, ProjectionRead } from './partition-pruning.js';
import type { StoredColumnUse } from './stored-column-reads.js';

/**
 * Result columns named as DataFusion names them where clients index by name: DuckDB names an
 * unaliased `count(*)` `count_star()`, micromegas users read `count(*)`.
 */
export function dataFusionNames(description: StatementDescription): StatementDescription {
  const { schema } = description;
  if (!schema.fields.some((f) => f.name === 'count_star()')) return description;
  const renamed = derivedSchema(schema, 'count(*)', () => {
    const fields = schema.fields.map((f) =>
      f.name === 'count_star()' ? new Field('count(*)', f.type, f.nullable, f.metadata) : f,
    );
    return new Schema(fields, schema.metadata);
  });
  return { ...description, schema: renamed };
}

/** The schema metadata key holding, as JSON, what a result read of rollups (and why it skipped the others). */
export const provenanceKey = 'orrery.provenance';

/** A result's description with its provenance in the schema metadata, when it touched a table with rollups. */
export function withProvenance(
  description: StatementDescription,
  provenance:
    | (Provenance & {
        partitions?: PartitionsRead[];
        stored_columns?: StoredColumnUse[];
        projections?: ProjectionRead[];
      })
    | undefined,
): StatementDescription {
  if (!provenance) return description;
  const { schema } = description;
  const text = JSON.stringify(provenance);
  const withText = derivedSchema(schema, `${provenanceKey} ${text}`, () => {
    const metadata = new Map(schema.metadata);
    metadata.set(provenanceKey, text);
    return new Schema(schema.fields, metadata);
  });
  return { ...description, schema: withText };
}
