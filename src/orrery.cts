#!/usr/bin/env node
// The `orrery` command. CommonJS on purpose: it runs before anything has used libuv's thread
// pool, whose size is fixed at its first use (an ES module entry is too late: loading it already
// uses the pool). DuckDB runs each statement's blocking work on a pool thread, and file writes,
// gzip and DNS use the same pool: with libuv's default of 4, four heavy statements held up OTLP
// ingestion and every other statement. The pool gets a thread per statement that may run at once
// (ORRERY_MAX_CONCURRENT_QUERIES, default 16) and 4 for the rest; an explicit UV_THREADPOOL_SIZE wins.
const running = Number(process.env.ORRERY_MAX_CONCURRENT_QUERIES || 16);
process.env.UV_THREADPOOL_SIZE ||= String(
  Math.min(1024, (Number.isInteger(running) && running > 0 ? running : 16) + 4),
);
void import('./cli.js');
