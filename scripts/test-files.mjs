// Runs compiled test files one at a time, each in a node process of its own (as `node --test` does) that leads its own
// process group, with a deadline: a file still running at its deadline (a hook waiting on a child process, a pool
// waiting on a client never released) is reported with what it was doing — the tests under way, the handles its
// event loop waits on (a Node.js report), its processes and the tail of its output — then killed with everything it
// started, and counted failed. A file that ends leaving processes of its group behind has them killed.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeProcesses, killTree, processTree } from './process-tree.mjs';

const scripts = new URL('.', import.meta.url).pathname;
// Set when this runs under node's test runner (its own test): a file would report to it, not to these reporters.
const inherited = { ...process.env };
delete inherited.NODE_TEST_CONTEXT;
const tailLines = 40;

const readOr = (path, otherwise) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return otherwise;
  }
};

/** scripts/test-file-reporter.mjs's lines: the tests started and not ended, and the failures it listed at the end. */
function reported(reporterFile) {
  const open = [];
  const failures = [];
  for (const line of readOr(reporterFile, '').split('\n')) {
    const [what, nesting, at, name] = line.split('\t');
    if (what === 'start') open.push({ nesting, at, name });
    else if (what === 'end') {
      const i = open.findLastIndex((t) => t.nesting === nesting && t.at === at && t.name === name);
      if (i >= 0) open.splice(i, 1);
    } else if (line) failures.push(line);
  }
  return { underWay: open.map((t) => `${'  '.repeat(Number(t.nesting))}${t.name} (${t.at})`), failures };
}

/** A Node.js report's JavaScript stack and the libuv handles that keep the event loop alive. */
function summarizeReport(report) {
  const lines = [];
  const stack = report.javascriptStack;
  if (stack?.message) lines.push(`JavaScript stack: ${stack.message}`, ...(stack.stack ?? []).map((s) => `  ${s}`));
  else lines.push('JavaScript stack: none (the event loop is idle, waiting)');
  lines.push('handles the event loop waits on:');
  for (const h of report.libuv ?? []) {
    if (!h.is_active || h.is_referenced === false || ['loop', 'idle', 'prepare', 'check', 'async'].includes(h.type))
      continue;
    const endpoint = (e) => (e ? `${e.host}:${e.port}` : '?');
    const details =
      h.type === 'tcp'
        ? `${endpoint(h.localEndpoint)} -> ${endpoint(h.remoteEndpoint)}`
        : h.type === 'timer'
          ? `fires in ${h.firesInMsFromNow} ms${h.repeat ? `, every ${h.repeat} ms` : ''}`
          : h.type === 'process'
            ? `pid ${h.pid}`
            : h.type === 'signal'
              ? h.signal
              : (h.fd ?? '');
    lines.push(`  ${h.type} ${details}`.trimEnd());
  }
  return lines;
}

/** Asks the file's process for a Node.js report (it runs with --report-on-signal) and summarizes it. */
async function reportOf(pid, reportFile) {
  try {
    process.kill(pid, 'SIGUSR2');
  } catch {
    return ['no Node.js report: the process is gone'];
  }
  for (let waited = 0; waited < 10_000; waited += 100) {
    await sleep(100);
    try {
      return summarizeReport(JSON.parse(readFileSync(reportFile, 'utf8')));
    } catch {
      // not written yet, or written halfway
    }
  }
  return ['no Node.js report within 10 s (the event loop is busy or blocked)'];
}

const lines = (label, list) => [label, ...list.map((line) => `  ${line}`)];

/** Runs one file; resolves once it and the processes of its group are gone, with what the summary prints of it. */
async function runFile(file, { env, nodeArgs, deadlineMs, root, work, index }) {
  const reporterFile = join(work, `reporter-${index}.txt`);
  const reportFile = `report-${index}.json`;
  const started = Date.now();
  const child = spawn(
    process.execPath,
    [
      ...[
        '--report-on-signal',
        '--report-signal=SIGUSR2',
        `--report-directory=${work}`,
        `--report-filename=${reportFile}`,
      ],
      ...['--test-reporter=tap', '--test-reporter-destination=stdout'],
      ...[`--test-reporter=${join(scripts, 'test-file-reporter.mjs')}`, `--test-reporter-destination=${reporterFile}`],
      ...nodeArgs,
      file,
    ],
    { env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  const tail = [];
  const counts = {};
  const keep = (stream, out) => {
    let partial = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => {
      out.write(chunk);
      const parts = (partial + chunk).split('\n');
      partial = parts.pop();
      for (const line of parts) {
        // The TAP reporter's totals, at the end of the file's output.
        const total = /^# (tests|suites|pass|fail|cancelled|skipped|todo) (\d+)$/.exec(line);
        if (total) counts[total[1]] = Number(total[2]);
        tail.push(line);
        if (tail.length > tailLines) tail.shift();
      }
    });
  };
  keep(child.stdout, process.stdout);
  keep(child.stderr, process.stderr);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  // Its output read to the end; bounded, should a process outside its tree hold the pipes.
  const closed = new Promise((resolve) => child.once('close', resolve));
  const drained = async () => {
    let timer;
    await Promise.race([closed, new Promise((resolve) => (timer = setTimeout(resolve, 10_000)))]);
    clearTimeout(timer);
  };
  let timer;
  const deadline = new Promise((resolve) => (timer = setTimeout(resolve, deadlineMs, 'deadline')));
  const ended = await Promise.race([exited, deadline]);
  clearTimeout(timer);
  const name = relative(root, file);
  const seconds = () => Math.round((Date.now() - started) / 1000);
  const outputTail = () => lines(`the last ${tail.length} lines of its output:`, tail);
  if (ended === 'deadline') {
    console.log(`# ${name}: still running at its deadline (${deadlineMs / 1000} s): stopping it and its processes`);
    const report = await reportOf(child.pid, join(work, reportFile));
    const processes = processTree(child.pid);
    killTree(child.pid);
    await drained();
    const { underWay, failures } = reported(reporterFile);
    return {
      name,
      failed: true,
      ms: Date.now() - started,
      counts,
      why:
        `still running after ${seconds()} s, past its deadline of ${deadlineMs / 1000} s ` +
        '(ORRERY_TEST_FILE_DEADLINE_SECONDS): killed with its processes',
      details: [
        ...lines('tests under way:', underWay.length ? underWay : ['none (a hook, or the end of the file)']),
        ...report,
        ...lines('its processes (before they were killed):', describeProcesses(processes)),
        ...outputTail(),
      ],
      failures,
    };
  }
  // What it started in its group and left running goes too (OrreryChild's children are killed as their test exits).
  let left = processTree(child.pid);
  for (let waited = 0; left.length > 0 && waited < 5_000; waited += 100) {
    await sleep(100);
    left = processTree(child.pid);
  }
  if (left.length > 0)
    for (const line of lines(
      `${name} ended leaving processes running; killed:`,
      describeProcesses(killTree(child.pid)),
    ))
      console.log(`# ${line}`);
  await drained();
  const { code, signal } = ended;
  const { failures } = reported(reporterFile);
  return {
    name,
    failed: code !== 0,
    ms: Date.now() - started,
    counts,
    why: `exited with ${signal ? `signal ${signal}` : `code ${code}`}`,
    // A file that fails outside its tests (an import, an uncaught error) lists no failure: its output tells.
    details: failures.length === 0 ? outputTail() : [],
    failures,
  };
}

/**
 * Runs `files` one after the other with `env` added to the environment; prints the totals, the slowest files, then
 * each failed file with its failures (last: CI keeps only the tail of a run's output). 0 when every file passed.
 */
export async function runTestFiles(label, files, { env = {}, nodeArgs = [], deadlineMs, root }) {
  console.log(`# ${label}`);
  const work = mkdtempSync(join(tmpdir(), 'orrery-run-tests-'));
  const started = Date.now();
  const results = [];
  try {
    for (const [index, file] of files.entries())
      results.push(await runFile(file, { env, nodeArgs, deadlineMs, root, work, index }));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  const totals = {};
  for (const r of results) for (const [k, v] of Object.entries(r.counts)) totals[k] = (totals[k] ?? 0) + v;
  const failed = results.filter((r) => r.failed);
  console.log(
    `# ${label}: ${files.length} files in ${Math.round((Date.now() - started) / 1000)} s, ${failed.length} failed; ` +
      Object.entries(totals)
        .map(([k, v]) => `${k} ${v}`)
        .join(', '),
  );
  const slowest = [...results].sort((a, b) => b.ms - a.ms).slice(0, 5);
  console.log(`# slowest files: ${slowest.map((r) => `${r.name} ${Math.round(r.ms / 1000)} s`).join(', ')}`);
  for (const r of failed) {
    console.log(`\n# FILE FAILED ${r.name}: ${r.why}`);
    for (const line of r.details) console.log(`#   ${line}`);
    for (const line of r.failures) console.log(line);
  }
  return failed.length === 0 ? 0 : 1;
}
