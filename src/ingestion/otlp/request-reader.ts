// Parses an Export*ServiceRequest body (protobuf or OTLP/JSON) and walks its resource / scope / record levels.
import { attributes, scopeOf } from './any-value.js';
import { malformed } from './errors.js';
import { element, field, list, message, str, uint32, type Field, type OtlpNode } from './otlp-fields.js';
import { exportRequestTypes } from './otlp-proto.js';
import type { Attributes, AttrValue, OtlpContentType, OtlpScope, OtlpSignal, ResourceGroup } from './otlp-types.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Parses a request body to a decoded protobuf message or a JSON object; refuses anything else with a 400. */
export function parseRequest(body: Uint8Array, contentType: OtlpContentType, signal: OtlpSignal): OtlpNode {
  const type = exportRequestTypes[signal];
  if (contentType === 'protobuf') {
    try {
      return type.decode(body) as OtlpNode;
    } catch (error) {
      throw malformed(`body is not a valid ${type.name} protobuf message: ${(error as Error).message}`);
    }
  }
  if (contentType !== 'json') throw new TypeError(`unknown OTLP content type '${String(contentType)}'`);
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw malformed('JSON body is not valid UTF-8');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw malformed(`body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw malformed(
      `JSON body must be an ${type.name} object, got ${Array.isArray(parsed) ? 'an array' : JSON.stringify(parsed)}`,
    );
  }
  return parsed as OtlpNode;
}

const RESOURCE = field('resource');
const SCHEMA_URL = field('schemaUrl');
const DROPPED = field('droppedAttributesCount');

/**
 * Resource attributes are stored in Postgres (the process's properties), whose text and JSON types
 * cannot hold NUL: a NUL in a key or value is refused here, before anything of the request is stored.
 */
function storableResource(attrs: Attributes, path: string): Attributes {
  const check = (value: AttrValue, where: string): void => {
    if (typeof value === 'string' && value.includes('\u0000'))
      throw malformed(`${where}: a resource attribute may not contain NUL (U+0000)`);
    if (Array.isArray(value)) value.forEach((item, i) => check(item, `${where}[${i}]`));
    else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        if (key.includes('\u0000')) throw malformed(`${where}: a resource attribute key may not contain NUL (U+0000)`);
        check(item, `${where}[${JSON.stringify(key)}]`);
      }
    }
  };
  check(attrs, path);
  return attrs;
}

/** The field names of one signal's levels: resourceLogs / scopeLogs / logRecords and so on. */
export interface SignalLevels {
  readonly resources: Field;
  readonly scopes: Field;
  readonly records: Field;
}

/**
 * Walks resources, scopes and records of a parsed request; `decode` turns one record into zero or more
 * outputs (a metric gives one per data point). One group per resource entry, in request order.
 */
export function readGroups<R>(
  request: OtlpNode,
  levels: SignalLevels,
  decode: (record: OtlpNode, scope: OtlpScope, path: string, out: R[]) => void,
): ResourceGroup<R>[] {
  const resources = list(request, levels.resources, '$');
  const groups: ResourceGroup<R>[] = [];
  for (let r = 0; r < resources.length; r++) {
    const rPath = `$.${levels.resources.camel}[${r}]`;
    const entry = element(resources, r, '$', levels.resources);
    const resource = message(entry, RESOURCE, rPath);
    const resPath = `${rPath}.resource`;
    const group: ResourceGroup<R> = {
      resource: {
        attributes: resource === null ? {} : storableResource(attributes(resource, resPath), `${resPath}.attributes`),
        droppedAttributesCount: resource === null ? 0 : uint32(resource, DROPPED, resPath),
      },
      schemaUrl: str(entry, SCHEMA_URL, rPath),
      records: [],
    };
    const scopes = list(entry, levels.scopes, rPath);
    for (let s = 0; s < scopes.length; s++) {
      const sPath = `${rPath}.${levels.scopes.camel}[${s}]`;
      const scopeEntry = element(scopes, s, rPath, levels.scopes);
      const scope = scopeOf(scopeEntry, sPath);
      const records = list(scopeEntry, levels.records, sPath);
      for (let i = 0; i < records.length; i++) {
        decode(
          element(records, i, sPath, levels.records),
          scope,
          `${sPath}.${levels.records.camel}[${i}]`,
          group.records,
        );
      }
    }
    groups.push(group);
  }
  return groups;
}
