import { randomBytes } from 'node:crypto';

// Flight sessions (SetSessionOptions, GetSessionOptions, CloseSession): options a client sets and
// reads back, kept per session. A session is named by the `arrow_flight_session_id` cookie, as the
// Flight specification has it (the JDBC driver keeps cookies by default; ADBC with its cookie
// middleware): the server sets it in the answer to the SetSessionOptions that opens one. A session
// serves only the key that opened it.

export const sessionCookie = 'arrow_flight_session_id';

/** A SessionOptionValue as protobufjs decodes it: one member of its oneof set, or none (remove the option). */
export interface SessionOptionValue {
  stringValue?: string;
  boolValue?: boolean;
  int64Value?: unknown;
  doubleValue?: number;
  stringListValue?: { values?: string[] };
}

/** SetSessionOptionsResult.ErrorValue. */
export const optionError = { invalidName: 1, invalidValue: 2 } as const;

interface Session {
  readonly owner: string;
  readonly options: Map<string, string>;
  lastUsed: number;
}

/** The sessions of one server, bounded in number and dropped after `idleMs` unused. */
export class FlightSessions {
  private readonly sessions = new Map<string, Session>();

  constructor(
    private readonly maxSessions = 10_000,
    private readonly idleMs = 3_600_000,
  ) {}

  /** The session a request's cookie names, when it is the caller's and still open. */
  find(cookieHeader: string | undefined, owner: string): { id: string; options: Map<string, string> } | undefined {
    const id = cookieValue(cookieHeader, sessionCookie);
    const session = id === undefined ? undefined : this.sessions.get(id);
    if (!id || !session || session.owner !== owner) return undefined;
    if (Date.now() - session.lastUsed > this.idleMs) {
      this.sessions.delete(id);
      return undefined;
    }
    session.lastUsed = Date.now();
    return { id, options: session.options };
  }

  /** Opens a session for `owner`; returns its id (the cookie's value). */
  open(owner: string): { id: string; options: Map<string, string> } {
    const now = Date.now();
    for (const [id, session] of this.sessions) {
      if (this.sessions.size < this.maxSessions && now - session.lastUsed <= this.idleMs) break;
      this.sessions.delete(id);
    }
    const id = randomBytes(16).toString('hex');
    const options = new Map<string, string>();
    this.sessions.set(id, { owner, options, lastUsed: now });
    return { id, options };
  }

  close(id: string): void {
    this.sessions.delete(id);
  }
}

/** One cookie's value from a `cookie` request header. */
function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
