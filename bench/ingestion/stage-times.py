"""Adds stage timers to a built tree's OTLP ack path (a copy: see stage-times.sh), by text anchors of the compiled
JavaScript; fails when an anchor is missing (the code moved: update the anchors). At the server's exit it prints,
per stage, n, mean, p50 and p90 in ms over every request after the first WARMUP s (STAGE_WARMUP_MS)."""
import sys
from pathlib import Path

dist = Path(sys.argv[1]) / "dist" / "src" / "ingestion"
TRACER = """globalThis.__stages ??= (() => {
  const m = new Map(); let from = 0; const warmup = Number(process.env.STAGE_WARMUP_MS ?? 2000);
  const add = (k, v) => { const now = performance.now(); if (!from) from = now + warmup; if (now < from) return;
    let a = m.get(k); if (!a) m.set(k, (a = [])); a.push(v); };
  process.on('exit', () => { const out = ['STAGES (ms per request; write/commit per group)'];
    for (const [k, a] of [...m].sort()) { a.sort((x, y) => x - y); const mean = a.reduce((x, y) => x + y, 0) / a.length;
      out.push(`${k.padEnd(30)} n=${String(a.length).padStart(6)} mean=${mean.toFixed(3)} p50=${a[a.length >> 1].toFixed(3)} p90=${a[Math.floor(a.length * 0.9)].toFixed(3)}`); }
    process.stderr.write(out.join('\\n') + '\\n'); });
  return { add }; })();
"""


def patch(name, pairs, prefix=""):
    """`old` may be a tuple of anchors, of the code before and after a change: the first one found is patched."""
    path = dist / name
    text = path.read_text()
    for olds, new in pairs:
        old = next((o for o in (olds if isinstance(olds, tuple) else (olds,)) if o in text), None)
        if old is None:
            sys.exit(f"stage-times: anchor not found in {name}: {str(olds)[:80]!r}")
        text = text.replace(old, new(old) if callable(new) else new, 1)
    path.write_text(prefix + text)


patch("http-server.js", [
    ("    async ingest(signal, request, response) {\n",
     "    async ingest(signal, request, response) {\n        const __t0 = performance.now(); const __ctx = {};\n"),
    ("await this.options.ingestion.ingest(signal, body, contentType, principal.audiences[0], received);",
     "globalThis.__stages.add('1 body read', performance.now() - __t0); __ctx.t = performance.now();\n"
     "            await this.options.ingestion.ingest(signal, body, contentType, principal.audiences[0], received, __ctx);"),
    ("        this.options.metrics.ingestionRequests.inc({ signal, status: 200 });",
     "        globalThis.__stages.add('8 total (request read to answer)', performance.now() - __t0);\n"
     "        this.options.metrics.ingestionRequests.inc({ signal, status: 200 });"),
], TRACER)
patch("ingestion-service.js", [
    ("async ingest(signal, body, contentType, audience, received) {",
     "async ingest(signal, body, contentType, audience, received, __ctx = {}) {"),
    ("        const blocks = (await this.blocks(signal, body, contentType, now, received))",
     "        const __b = await this.blocks(signal, body, contentType, now, received);\n"
     "        globalThis.__stages.add('2 scan, sha256, brotli (worker)', performance.now() - __ctx.t);\n"
     "        const blocks = __b"),
])
patch("group-commit.js", [
    ("this.toWrite.push({ item, resolve, reject })", "this.toWrite.push({ item, resolve, reject, ts: performance.now() })"),
    ("            const group = this.toWrite.splice(0);\n",
     "            const group = this.toWrite.splice(0); const __w = performance.now();\n"
     "            for (const e of group) globalThis.__stages.add('3 wait for the write stage', __w - e.ts);\n"),
    ("            this.toCommit.push(",
     "            globalThis.__stages.add('4 write stage (per group)', performance.now() - __w);\n"
     "            for (const e of group) e.ts = performance.now();\n"
     "            this.toCommit.push("),
    ("            const group = this.toCommit.splice(0);\n",
     "            const group = this.toCommit.splice(0); const __c = performance.now();\n"
     "            for (const e of group) globalThis.__stages.add('5 wait for the commit stage', __c - e.entry.ts);\n"
     "            globalThis.__stages.add('7 requests per commit', group.length);\n"),
    # Before and after ORRERY_INGEST_ACK (a request answered once written is resolved no more at its commit).
    (("                group.forEach(({ entry }, i) => entry.resolve(results[i]));",
      "                group.forEach(({ entry, answered }, i) => (answered ? answered() : entry.resolve(results[i])));"),
     lambda old: "                globalThis.__stages.add('6 commit stage (per group)', performance.now() - __c);\n" + old),
])
