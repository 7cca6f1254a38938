import type { RecordBatch, Schema } from 'apache-arrow';
import type { CallContext, FlightSqlBackend, TableRef } from './backend.js';
import { schemaForClient } from './client-timestamps.js';
import { encapsulateSchema } from '../wire/index.js';
import * as schemas from './metadata-schemas.js';
import { batchFromRows } from './record-batches.js';
import { selectSqlInfo, sqlInfoArms } from './sql-info.js';

/** The metadata commands, by Flight SQL message name. */
export const metadataCommands = new Set([
  'CommandGetCatalogs',
  'CommandGetDbSchemas',
  'CommandGetTables',
  'CommandGetTableTypes',
  'CommandGetPrimaryKeys',
  'CommandGetExportedKeys',
  'CommandGetImportedKeys',
  'CommandGetCrossReference',
  'CommandGetXdbcTypeInfo',
  'CommandGetSqlInfo',
]);

/** Decoded command messages (see proto/FlightSql.proto); absent optional fields are undefined. */
export interface MetadataCommand {
  catalog?: string | null;
  dbSchemaFilterPattern?: string | null;
  tableNameFilterPattern?: string | null;
  tableTypes?: string[];
  includeSchema?: boolean;
  dbSchema?: string | null;
  table?: string;
  pkCatalog?: string | null;
  pkDbSchema?: string | null;
  pkTable?: string;
  fkCatalog?: string | null;
  fkDbSchema?: string | null;
  fkTable?: string;
  dataType?: number | null;
  info?: number[];
}

/** The mandated schema of a metadata command's result. */
export function metadataSchema(name: string, command: MetadataCommand): Schema {
  switch (name) {
    case 'CommandGetCatalogs':
      return schemas.catalogsSchema;
    case 'CommandGetDbSchemas':
      return schemas.dbSchemasSchema;
    case 'CommandGetTables':
      return command.includeSchema ? schemas.tablesWithSchemaSchema : schemas.tablesSchema;
    case 'CommandGetTableTypes':
      return schemas.tableTypesSchema;
    case 'CommandGetPrimaryKeys':
      return schemas.primaryKeysSchema;
    case 'CommandGetXdbcTypeInfo':
      return schemas.xdbcTypeInfoSchema;
    case 'CommandGetSqlInfo':
      return schemas.sqlInfoSchema;
    default:
      return schemas.foreignKeysSchema;
  }
}

/** Runs a metadata command against the backend: one batch in the mandated schema. */
export async function runMetadataCommand<P>(
  backend: FlightSqlBackend<P>,
  ctx: CallContext<P>,
  name: string,
  command: MetadataCommand,
): Promise<RecordBatch> {
  const schema = metadataSchema(name, command);
  return batchFromRows(schema, await metadataRows(backend, ctx, name, command));
}

async function metadataRows<P>(
  backend: FlightSqlBackend<P>,
  ctx: CallContext<P>,
  name: string,
  command: MetadataCommand,
): Promise<unknown[][]> {
  switch (name) {
    case 'CommandGetCatalogs':
      return [...new Set(await backend.getCatalogs(ctx))].sort().map((catalog) => [catalog]);
    case 'CommandGetDbSchemas': {
      const schemaMatches = likeMatcher(command.dbSchemaFilterPattern);
      return (await backend.getDbSchemas(ctx))
        .filter((s) => catalogMatches(command.catalog, s.catalog) && schemaMatches(s.schema))
        .sort((a, b) => compare(a.catalog, b.catalog) || compare(a.schema, b.schema))
        .map((s) => [s.catalog, s.schema]);
    }
    case 'CommandGetTables':
      return tableRows(backend, ctx, command);
    case 'CommandGetTableTypes':
      return [...new Set(await backend.getTableTypes(ctx))].sort().map((type) => [type]);
    case 'CommandGetPrimaryKeys': {
      const ref = { catalog: command.catalog ?? null, schema: command.dbSchema ?? null, table: command.table ?? '' };
      const keys = backend.getPrimaryKeys ? await backend.getPrimaryKeys(ctx, ref) : [];
      return keys
        .sort(
          (a, b) =>
            compare(a.catalog, b.catalog) ||
            compare(a.schema, b.schema) ||
            compare(a.table, b.table) ||
            a.keySequence - b.keySequence,
        )
        .map((k) => [k.catalog, k.schema, k.table, k.column, k.keySequence, k.keyName]);
    }
    case 'CommandGetXdbcTypeInfo': {
      const types = await backend.getXdbcTypeInfo(ctx);
      return types
        .filter((t) => command.dataType == null || t.dataType === command.dataType)
        .sort((a, b) => a.dataType - b.dataType || compare(a.typeName, b.typeName))
        .map((t) => [
          t.typeName,
          t.dataType,
          t.columnSize,
          t.literalPrefix,
          t.literalSuffix,
          t.createParams,
          t.nullable,
          t.caseSensitive,
          t.searchable,
          t.unsignedAttribute,
          t.fixedPrecScale,
          t.autoIncrement,
          t.localTypeName,
          t.minimumScale,
          t.maximumScale,
          t.sqlDataType,
          t.datetimeSubcode,
          t.numPrecRadix,
          t.intervalPrecision,
        ]);
    }
    case 'CommandGetSqlInfo':
      return selectSqlInfo(backend.sqlInfo(), command.info ?? []).map(([id, value]) => [
        id,
        [sqlInfoArms.get(id), value instanceof Map ? value : normaliseScalar(sqlInfoArms.get(id) ?? 0, value)],
      ]);
    default:
      return foreignKeyRows(backend, ctx, name, command);
  }
}

async function tableRows<P>(
  backend: FlightSqlBackend<P>,
  ctx: CallContext<P>,
  command: MetadataCommand,
): Promise<unknown[][]> {
  const schemaMatches = likeMatcher(command.dbSchemaFilterPattern);
  const tableMatches = likeMatcher(command.tableNameFilterPattern);
  const wantedTypes = new Set((command.tableTypes ?? []).map(normaliseTableType));
  const tables = (await backend.getTables(ctx, command.includeSchema ?? false))
    .filter(
      (t) =>
        catalogMatches(command.catalog, t.catalog) &&
        schemaMatches(t.schema ?? '') &&
        tableMatches(t.name) &&
        (wantedTypes.size === 0 || wantedTypes.has(normaliseTableType(t.type))),
    )
    // Exact name matches first: Grafana reads the first row's schema, and `_` is a wildcard.
    .sort(
      (a, b) =>
        Number(b.name === command.tableNameFilterPattern) - Number(a.name === command.tableNameFilterPattern) ||
        compare(a.catalog, b.catalog) ||
        compare(a.schema, b.schema) ||
        compare(a.name, b.name) ||
        compare(a.type, b.type),
    );
  return tables.map((t) => {
    const row: unknown[] = [t.catalog, t.schema, t.name, t.type];
    if (command.includeSchema)
      row.push(
        t.arrowSchema
          ? encapsulateSchema(schemaForClient(t.arrowSchema, ctx.options.zonedTimestamps))
          : new Uint8Array(0),
      );
    return row;
  });
}

async function foreignKeyRows<P>(
  backend: FlightSqlBackend<P>,
  ctx: CallContext<P>,
  name: string,
  command: MetadataCommand,
): Promise<unknown[][]> {
  if (!backend.getForeignKeys) return [];
  const ref = (catalog?: string | null, schema?: string | null, table?: string): TableRef => ({
    catalog: catalog ?? null,
    schema: schema ?? null,
    table: table ?? '',
  });
  const filter =
    name === 'CommandGetExportedKeys'
      ? { pk: ref(command.catalog, command.dbSchema, command.table) }
      : name === 'CommandGetImportedKeys'
        ? { fk: ref(command.catalog, command.dbSchema, command.table) }
        : {
            pk: ref(command.pkCatalog, command.pkDbSchema, command.pkTable),
            fk: ref(command.fkCatalog, command.fkDbSchema, command.fkTable),
          };
  const keys = await backend.getForeignKeys(ctx, filter);
  const byFk = name === 'CommandGetImportedKeys';
  return keys
    .sort((a, b) =>
      byFk
        ? compare(a.pkCatalog, b.pkCatalog) ||
          compare(a.pkSchema, b.pkSchema) ||
          compare(a.pkTable, b.pkTable) ||
          a.keySequence - b.keySequence
        : compare(a.fkCatalog, b.fkCatalog) ||
          compare(a.fkSchema, b.fkSchema) ||
          compare(a.fkTable, b.fkTable) ||
          a.keySequence - b.keySequence,
    )
    .map((k) => [
      k.pkCatalog,
      k.pkSchema,
      k.pkTable,
      k.pkColumn,
      k.fkCatalog,
      k.fkSchema,
      k.fkTable,
      k.fkColumn,
      k.keySequence,
      k.fkKeyName,
      k.pkKeyName,
      k.updateRule,
      k.deleteRule,
    ]);
}

function normaliseScalar(arm: number, value: unknown): unknown {
  if (arm === 2) return typeof value === 'bigint' ? value : BigInt(value as number);
  if (arm === 3) return Number(value);
  return value;
}

/** `BASE TABLE` (what Grafana asks for) is a TABLE; types match case-insensitively. */
function normaliseTableType(type: string): string {
  const upper = type.trim().toUpperCase();
  return upper === 'BASE TABLE' ? 'TABLE' : upper;
}

/** An omitted catalog means any; an empty one means objects without a catalog. */
function catalogMatches(wanted: string | null | undefined, actual: string | null): boolean {
  if (wanted == null) return true;
  return wanted === '' ? actual == null || actual === '' : wanted === actual;
}

/** A SQL LIKE pattern (`%`, `_`, `\` escapes) as a predicate; no pattern matches everything. */
export function likeMatcher(pattern: string | null | undefined): (value: string) => boolean {
  if (pattern == null) return () => true;
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\' && i + 1 < pattern.length) source += escapeRegExp(pattern[++i]);
    else if (c === '%') source += '[\\s\\S]*';
    else if (c === '_') source += '[\\s\\S]';
    else source += escapeRegExp(c);
  }
  const regex = new RegExp(`^${source}$`, 'u');
  return (value) => regex.test(value);
}

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

function compare(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a == null) return -1;
  if (b == null) return 1;
  return a < b ? -1 : 1;
}
