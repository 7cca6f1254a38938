/** A view set defined by CREATE MATERIALIZED VIEW, as stored in lakehouse_view_set_definitions. */
export interface ViewDefinition {
  readonly name: string;
  /** The CREATE statement exactly as sent. */
  readonly definitionSql: string;
  readonly extractQuery: string;
  readonly countQuery: string;
  readonly mergeQuery: string;
  readonly updateGroup: number;
  readonly minTimeColumn: string;
  readonly maxTimeColumn: string;
  readonly sourcePartitionDelta: string;
  readonly mergePartitionDelta: string;
  readonly mergeSortOrder?: readonly string[];
}

/** A stored row, with when and by whom it was written. */
export interface StoredDefinition extends ViewDefinition {
  readonly createdAt: Date;
  readonly updatedAt: Date;
  readonly updatedBy: string | null;
}

/** The JSON kept in view_options. */
export interface ViewOptionsJson {
  minTimeColumn: string;
  maxTimeColumn: string;
  sourcePartitionDelta: string;
  mergePartitionDelta: string;
  mergeSortOrder?: string[];
}
