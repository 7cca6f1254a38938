// Statement routing: who may run what, and where each statement goes.
export { SqlService, type LakehouseBackend } from './sql-service.js';
export { DenyRules, type DenyRule, type QueryAttributes } from './deny-rules.js';
export { DdlService, type DdlAction } from './ddl-service.js';
export { defaultQueryLimits, type QueryLimits } from './statement-limits.js';
