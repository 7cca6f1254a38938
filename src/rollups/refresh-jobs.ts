import type { MetadataStore } from '../metadata/index.js';
import { retrySeconds } from './job-updates.js';
import type { RefreshOutcome, Rollups } from './rollups.js';

/** What the refresh jobs report, for metrics. */
export interface RefreshReport {
  readonly rollup: string;
  readonly seconds: number;
  readonly outcome?: RefreshOutcome;
  readonly failed?: boolean;
}

/** How often the runner looks for due jobs: a new rollup's first refresh starts within this. */
const tickMs = 1000;

/**
 * Runs the rollups' refresh jobs (every process's, servers and daemons alike): every due job in
 * `rollup_jobs`, each under its rollup's advisory lock and checked due again under it, so several
 * processes share the jobs and a rollup refreshes once per due time. The outcome is recorded on the
 * job; a failure is kept (last_status, last_error) and retried, never skipped.
 */
export class RefreshJobs {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly rollups: Rollups,
    private readonly metadata: MetadataStore,
    private readonly log: (level: 'info' | 'warn' | 'error', message: string, error?: unknown) => void,
    private readonly report: (report: RefreshReport) => void = () => {},
  ) {}

  start(): void {
    const tick = (): void => {
      if (this.closed) return;
      this.running = this.runDue()
        .catch((error: unknown) => this.log('warn', 'rollup refresh jobs: cannot read the jobs', error))
        .finally(() => {
          this.running = undefined;
          if (!this.closed) this.timer = setTimeout(tick, tickMs);
        });
    };
    this.timer = setTimeout(tick, 0);
  }

  /** Runs every job that is due now, one after the other. */
  async runDue(): Promise<void> {
    const { rows } = await this.metadata.query<{ target: string }>(
      `SELECT target FROM rollup_jobs WHERE kind = 'refresh' AND next_run <= now() ORDER BY next_run`,
    );
    if (rows.length === 0) return;
    const definitions = await this.rollups.definitions();
    for (const { target } of rows) {
      if (this.closed) return;
      const definition = definitions.get(target);
      if (!definition) continue;
      // Skipped while another process refreshes it: that one records the job.
      await this.rollups.tryRefresh(definition, (refresh) => this.runHoldingLock(target, refresh));
    }
  }

  /** One job, under its rollup's lock: run only if still due (another runner may have run it since the list). */
  private async runHoldingLock(target: string, refresh: () => Promise<RefreshOutcome>): Promise<void> {
    const { rows } = await this.metadata.query(
      `SELECT 1 FROM rollup_jobs WHERE kind = 'refresh' AND target = $1 AND next_run <= now()`,
      [target],
    );
    if (rows.length === 0) return;
    const started = performance.now();
    try {
      // The refresh records its outcome on the job (see Rollups.refreshHoldingLock), as refresh_rollup's does.
      const outcome = await refresh();
      this.report({ rollup: target, seconds: (performance.now() - started) / 1000, outcome });
    } catch (error) {
      this.log('warn', `rollup ${target}: refresh failed (retried in ${retrySeconds} s)`, error);
      this.report({ rollup: target, seconds: (performance.now() - started) / 1000, failed: true });
    }
  }

  /** Stops the runner, waiting for a refresh under way. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }
}
