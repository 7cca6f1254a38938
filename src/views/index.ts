// View sets: what users query, how each is materialized, and how a session sees them.
export * from './view-set.js';
export { builtinViewSets, payloadColumns } from './builtin-views.js';
export { compatibilityMacros } from './sql-functions.js';
export {
  emptyRelation,
  filesRelation,
  quoteIdentifier,
  quoteLiteral,
  sessionStatements,
  withSource,
  type EventRange,
  type ReadScope,
  type SessionView,
} from './view-session.js';
export { ViewRegistry } from './view-registry.js';
