import type { DuckDBConnection } from '@duckdb/node-api';
import type { OrreryError } from '../errors/index.js';
import { engineErrors } from './errors.js';

/** When a statement must stop, and what the caller is told then. */
export interface Deadline {
  /** Milliseconds since the epoch (Date.now()). */
  readonly at: number;
  readonly message: string;
}

/**
 * Stops a statement's DuckDB work when its caller cancels or its deadline passes, by
 * interrupting its connection (DuckDB then stops every thread working on it), and remembers
 * which of the two happened: an error DuckDB raises after that is the stop, whatever its text.
 */
export class StatementGuard {
  private stop: OrreryError | undefined;
  private readonly timer: NodeJS.Timeout | undefined;
  private repeat: NodeJS.Timeout | undefined;
  private readonly onAbort = (): void => this.interrupt(engineErrors.error('QUERY_CANCELLED', 'query cancelled'));

  constructor(
    private readonly connection: DuckDBConnection,
    private readonly signal: AbortSignal | undefined,
    deadline: Deadline | undefined,
  ) {
    if (signal?.aborted) this.onAbort();
    else signal?.addEventListener('abort', this.onAbort);
    if (deadline && !this.stop) {
      const fire = (): void => this.interrupt(engineErrors.error('QUERY_DEADLINE_EXCEEDED', deadline.message));
      const wait = deadline.at - Date.now();
      if (wait <= 0) fire();
      else this.timer = setTimeout(fire, wait);
    }
  }

  /** The stop, once one happened. */
  get stopped(): OrreryError | undefined {
    return this.stop;
  }

  /** Throws the stop if there was one: call between steps that DuckDB's interrupt does not reach. */
  check(): void {
    if (this.stop) throw this.stop;
  }

  /** Interrupts DuckDB's work without it counting as a stop (the consumer stopped reading). */
  halt(): void {
    this.connection.interrupt();
  }

  dispose(): void {
    clearTimeout(this.timer);
    clearInterval(this.repeat);
    this.signal?.removeEventListener('abort', this.onAbort);
  }

  private interrupt(reason: OrreryError): void {
    if (this.stop) return;
    this.stop = reason;
    this.connection.interrupt();
    // DuckDB clears the interrupt when a new execution begins on the connection, so one that
    // lands between two steps (prepared, not yet started) would be lost: repeat it until the
    // statement is done.
    this.repeat = setInterval(() => this.connection.interrupt(), 50);
    this.repeat.unref();
  }
}
