import type { Metadata } from '@grpc/grpc-js';
import type { CallContext, FlightSqlBackend, QueryOptions } from './backend.js';
import { zonedTimestamps } from './client-timestamps.js';
import { OrreryError } from '../errors/index.js';
import { invalidArgument, unauthenticated } from './errors.js';

/** Request headers as a map: names lower-cased, binary headers left out, last value wins. */
export function headerMap(metadata: Metadata): Map<string, string> {
  const headers = new Map<string, string>();
  for (const [name, value] of Object.entries(metadata.getMap())) {
    if (typeof value === 'string') headers.set(name.toLowerCase(), value);
  }
  return headers;
}

export type Credentials =
  { kind: 'basic'; username: string; password: string } | { kind: 'bearer'; token: string } | { kind: 'none' };

/** Reads the `authorization` header; Basic accepts padded and unpadded base64. */
export function readCredentials(headers: ReadonlyMap<string, string>): Credentials {
  const header = headers.get('authorization')?.trim();
  if (!header) return { kind: 'none' };
  const space = header.indexOf(' ');
  const scheme = (space < 0 ? header : header.slice(0, space)).toLowerCase();
  const value = space < 0 ? '' : header.slice(space + 1).trim();
  if (scheme === 'bearer' && value) return { kind: 'bearer', token: value };
  if (scheme === 'basic' && value) {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) return { kind: 'basic', username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  throw unauthenticated('malformed authorization header: expected "Bearer <key>" or "Basic <base64 name:key>"');
}

/** Who is calling: the backend decides; anything it rejects is UNAUTHENTICATED. */
export async function authenticate<P>(
  backend: FlightSqlBackend<P>,
  credentials: Credentials,
): Promise<{ principal: P; token?: string }> {
  try {
    switch (credentials.kind) {
      case 'basic':
        return await backend.authenticateBasic(credentials.username, credentials.password);
      case 'bearer':
        return { principal: await backend.authenticateBearer(credentials.token) };
      case 'none':
        if (!backend.authenticateAnonymous)
          throw unauthenticated('missing credentials: send "authorization: Bearer <key>" or use a Basic handshake');
        return { principal: await backend.authenticateAnonymous() };
    }
  } catch (error) {
    if (error instanceof OrreryError) throw error;
    throw unauthenticated('invalid credentials');
  }
}

/** The micromegas per-query headers. */
export function queryOptions(headers: ReadonlyMap<string, string>): QueryOptions {
  const begin = headers.get('query_range_begin');
  const end = headers.get('query_range_end');
  const limit = headers.get('limit');
  let parsedLimit: number | undefined;
  if (limit !== undefined && limit !== '') {
    if (!/^\d+$/.test(limit.trim()))
      throw invalidArgument(`header limit: expected a non-negative integer, got '${limit}'`);
    parsedLimit = Number(limit.trim());
  }
  return {
    rangeBegin: begin ? headerTime(begin, 'query_range_begin') : undefined,
    rangeEnd: end ? headerTime(end, 'query_range_end') : undefined,
    limit: parsedLimit,
    preserveDictionary: headers.get('preserve_dictionary')?.trim().toLowerCase() === 'true',
    zonedTimestamps: zonedTimestamps(headers),
  };
}

const rfc3339 = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:?\d{2})?$/;

/** The message for a time that is not RFC 3339; `name` says where it was given. */
export const notRfc3339 = (name: string, text: string): string =>
  `${name}: expected an RFC 3339 timestamp such as 2024-01-02T03:04:05Z, got '${text}'`;

function headerTime(text: string, header: string): bigint {
  const nanos = parseRfc3339Nanos(text);
  if (nanos === null) throw invalidArgument(notRfc3339(`header ${header}`, text));
  return nanos;
}

/** RFC 3339 to nanoseconds since the epoch, keeping sub-millisecond digits; null when `text` is not RFC 3339. */
export function parseRfc3339Nanos(text: string): bigint | null {
  const match = rfc3339.exec(text.trim());
  const millis = match ? Date.parse(`${match[1]}T${match[2]}${normaliseZone(match[4])}`) : NaN;
  if (!match || Number.isNaN(millis)) return null;
  const fraction = (match[3] ?? '').padEnd(9, '0');
  return BigInt(millis) * 1_000_000n + BigInt(fraction || '0');
}

function normaliseZone(zone: string | undefined): string {
  if (!zone || zone === 'z' || zone === 'Z') return 'Z';
  return zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone;
}

/** Builds the context for one call after authentication. */
export function makeContext<P>(
  principal: P,
  headers: Map<string, string>,
  signal: AbortSignal,
  deadline?: number,
): CallContext<P> {
  return { principal, headers, options: queryOptions(headers), signal, deadline };
}

/** A gRPC call's deadline in ms since the epoch; undefined when the client set none. */
export function deadlineMillis(deadline: Date | number): number | undefined {
  const at = deadline instanceof Date ? deadline.getTime() : deadline;
  return Number.isFinite(at) ? at : undefined;
}
