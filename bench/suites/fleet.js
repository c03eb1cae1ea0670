// 7. Several workers on one PostgreSQL (`serve --database-url`), on a
// throwaway cluster of their own (test/support/postgres.ts):
//   - propagation: a PATCH of a server's tool filter (applied without a
//     restart) on worker 1, timed until workers 2 and 3 show its version in
//     GET /api/mcp/servers/:name, and until they show the new filter too;
//     baseline: the PATCH's own round trip;
//   - tool-call throughput of a worker on PostgreSQL against the same worker
//     on the file store (calls never touch the database), sequential and 8 in
//     flight, in 100-call chunks taking turns, fresh workers each repetition;
//   - cold start of a worker with 200 servers in its store (real enabled
//     bench/fixtures/mini-server.mjs children, imported with
//     `mcp-fleet import`): spawn → /readyz 200, → every server ready in
//     GET /api/mcp/servers, → the startup summary, PostgreSQL against the
//     file store;
//   - refresh storm: an OAuth server's access token revoked at the resource
//     server (a real oidc-provider rotating refresh tokens, revoking the grant
//     on reuse) while 3 workers make 20 concurrent calls each: refresh grants
//     per revoked token (target 1) and ms until all 60 calls succeeded,
//     against one worker alone making 20.
// Every worker is a real `mcp-fleet serve` process; everything is stopped and
// removed in `finally`, and killed at exit if that did not run.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ECHO_SERVER, MINI_SERVER, sleep } from '../lib/env.js';
import { apiClient, importServers, postgres, secretKeyText, startWorker, tempDir } from '../lib/fleet-workers.js';
import { childPids } from '../lib/processes.js';
import { alternate, fmt, fmtRange, median, percentile, summarize, table } from '../lib/stats.js';
import { log, runSuite } from '../lib/suite.js';

const SERVER = 'echo';
const ECHO_CONFIG = { type: 'local', command: [process.execPath, ECHO_SERVER] };
const POLL_GAP_MS = 2;
const CHUNK = 100;
const IN_FLIGHT = 8;
const COLD_SERVERS = 200;
const COLD_CONCURRENCY = 8;
const LIST_POLL_MS = 50;
const PROPAGATION_TARGET_MS = 1000;
const THROUGHPUT_TARGET = 0.95;

// ── helpers ─────────────────────────────────────────────────────────────────

/** A worker started for this suite: stopped (and its state dir removed) at the end if not before. */
async function worker(cleanup, options) {
  const state = options.stateDir === undefined ? tempDir('worker') : undefined;
  const started = await startWorker({ ...options, stateDir: options.stateDir ?? state.dir });
  const client = apiClient(started.url, { sockets: options.sockets ?? 1 });
  const stop = async () => {
    client.close();
    await started.stop();
    state?.remove();
  };
  cleanup(stop);
  return { ...started, client, stop };
}

/** Resolves with the server's view on `client` once `accept(view)` holds, polling every `gapMs`. */
async function pollView(client, accept, { gapMs = POLL_GAP_MS, timeoutMs = 30_000, latencies } = {}) {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const sent = performance.now();
    const { status, json } = await client.request('GET', `/api/mcp/servers/${SERVER}`);
    const at = performance.now();
    latencies?.push(at - sent);
    if (status === 200 && accept(json)) return { at, view: json };
    if (at > until) throw new Error(`server ${SERVER}: not as expected within ${timeoutMs} ms: ${JSON.stringify(json)?.slice(0, 300)}`);
    await sleep(gapMs);
  }
}

const isReady = (view) => view?.state === 'ready';

/** `200 pending`, `3 ready, 197 connecting`, `none`: how many views are in each state. */
function stateCounts(views) {
  const counts = new Map();
  for (const view of views) counts.set(view.state, (counts.get(view.state) ?? 0) + 1);
  return counts.size === 0 ? 'none' : [...counts].map(([state, n]) => `${n} ${state}`).join(', ');
}

/** Waits until this process has no child left but tsx's esbuild service and the cluster helper's watchdog. */
async function quiet(timeoutMs = 15_000) {
  const cmdline = (pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      return '';
    }
  };
  const until = Date.now() + timeoutMs;
  for (;;) {
    const left = childPids().filter((pid) => !cmdline(pid).includes('mcp-fleet-pg-watchdog'));
    if (left.length === 0) return;
    if (Date.now() > until) throw new Error(`children still running: ${left.map((pid) => cmdline(pid).replaceAll('\0', ' ')).join('; ')}`);
    await sleep(20);
  }
}

/** A tool call that must succeed. */
async function echo(client) {
  const { status, text } = await client.request('POST', `/api/mcp/tools/${SERVER}__echo/call`, { arguments: { text: 'hello' } });
  if (status !== 200) throw new Error(`tool call answered ${status}: ${text.slice(0, 300)}`);
}

/** `calls` echo calls, `inFlight` at a time; returns the ms they took. */
async function callBurst(client, calls, inFlight) {
  const started = performance.now();
  let next = 0;
  const lane = async () => {
    while (next < calls) {
      next += 1;
      await echo(client);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return performance.now() - started;
}

const ms = (value) => `${fmt(value, 1)} ms`;

// ── 1. propagation ──────────────────────────────────────────────────────────

async function measurePropagation({ cluster, secretKey, patches, cleanup }) {
  const databaseUrl = await postgres.newDatabase(cluster);
  const workers = [];
  // One after another: the first creates the schema, the others find it current.
  for (const id of ['w1', 'w2', 'w3']) {
    const started = await worker(cleanup, { databaseUrl, workerId: id, secretKey });
    await started.ready;
    workers.push(started);
  }
  const [w1, ...others] = workers;
  const added = await w1.client.request('POST', '/api/mcp/servers', { name: SERVER, ...ECHO_CONFIG });
  if (added.status !== 201) throw new Error(`POST /api/mcp/servers answered ${added.status}: ${added.text}`);
  for (const w of workers) await pollView(w.client, isReady, { gapMs: 20 });
  log(`propagation: 3 workers on one database, ${SERVER} ready on each`);

  const roundTrip = [];
  /** Per other worker: ms until its GET showed the new version, and until it showed the new filter too. */
  const shown = others.map(() => []);
  const applied = others.map(() => []);
  const getLatencies = [];
  let notReady = 0;
  let staleViews = 0;
  let version = added.json.version;
  const warmUp = 3;
  for (let i = 0; i < warmUp + patches; i += 1) {
    const before = version;
    const exclude = `x${i}`;
    // Watching starts with the PATCH: any view newer than the version before it is this PATCH's.
    const t0 = performance.now();
    const watching = Promise.all(others.map((w) => follow(w.client, before, exclude, getLatencies)));
    watching.catch(() => {}); // awaited below; a failed PATCH must not leave it unhandled
    const patched = await w1.client.request('PATCH', `/api/mcp/servers/${SERVER}`, { tools: { include: null, exclude: [exclude] } });
    const rtt = performance.now() - t0;
    if (patched.status !== 200) throw new Error(`PATCH answered ${patched.status}: ${patched.text}`);
    version = patched.json.version;
    const followed = await watching;
    for (const [k, seen] of followed.entries()) {
      if (seen.view.version !== version) throw new Error(`w${k + 2} shows version ${seen.view.version}, expected ${version}`);
      if (!isReady(seen.view)) notReady += 1;
      if (seen.stale) staleViews += 1;
      if (i >= warmUp) {
        shown[k].push(seen.shownAt - t0);
        applied[k].push(seen.appliedAt - t0);
      }
    }
    if (i >= warmUp) {
      roundTrip.push(rtt);
      log(
        `propagation ${i - warmUp + 1}/${patches}: PATCH ${rtt.toFixed(1)} ms; applied on w2 ${applied[0].at(-1).toFixed(1)} ms, ` +
          `on w3 ${applied[1].at(-1).toFixed(1)} ms (version shown at ${shown[0].at(-1).toFixed(1)} / ${shown[1].at(-1).toFixed(1)} ms)`,
      );
    }
    // Apart, so one PATCH's aftermath (re-registering the tools) is not the next one's start.
    await sleep(30 + Math.random() * 30);
  }
  for (const w of workers) await w.stop();

  const describe = (values) => ({ p50: percentile(values, 50), p99: percentile(values, 99), max: Math.max(...values), n: values.length });
  const stats = {
    roundTrip: describe(roundTrip),
    w2: { shown: describe(shown[0]), applied: describe(applied[0]) },
    w3: { shown: describe(shown[1]), applied: describe(applied[1]) },
    both: describe(applied[0].map((value, i) => Math.max(value, applied[1][i]))),
    getMedian: median(getLatencies),
    notReady,
    staleViews,
  };
  const row = (label, s) => [label, ms(s.p50), ms(s.p99), ms(s.max), `${(s.p50 / stats.roundTrip.p50).toFixed(2)}×`, `${(s.p99 / stats.roundTrip.p99).toFixed(2)}×`];
  const markdown =
    `**Propagation of a PATCH** (${patches} PATCHes of \`tools.exclude\` on worker 1, a change applied without a restart; ` +
    `ms from sending the PATCH until a GET of the server on worker 2 / 3 shows its version, and until it shows the new filter as well, ` +
    `polled every ${POLL_GAP_MS} ms with a GET taking ${fmt(stats.getMedian, 2)} ms (median), so a figure is late by up to ~${fmt(POLL_GAP_MS + stats.getMedian, 1)} ms; ` +
    `the baseline is the PATCH's own round trip on worker 1. In ${staleViews} of ${2 * (warmUp + patches)} follows a GET showed the new version ` +
    `with the old filter; ${notReady} final views were not \`ready\`)\n\n` +
    table(['', 'p50', 'p99', 'max', 'p50 vs PATCH round trip', 'p99 vs PATCH round trip'], [
      row('PATCH round trip on worker 1 (baseline)', stats.roundTrip),
      row('worker 2: new version shown', stats.w2.shown),
      row('worker 2: new filter applied', stats.w2.applied),
      row('worker 3: new version shown', stats.w3.shown),
      row('worker 3: new filter applied', stats.w3.applied),
      row('applied on both', stats.both),
    ]);
  const targets = ['w2', 'w3'].map((key, k) => ({
    name: `PATCH applied on worker ${k + 2}: p99 < ${PROPAGATION_TARGET_MS} ms`,
    value: `${ms(stats[key].applied.p99)} (p50 ${ms(stats[key].applied.p50)}; ${(stats[key].applied.p99 / stats.roundTrip.p99).toFixed(2)}× the PATCH round trip's p99)`,
    pass: stats[key].applied.p99 < PROPAGATION_TARGET_MS,
  }));
  return { stats, targets, markdown };
}

/**
 * Polls the server on `client` until it shows a version after `before` and
 * the filter excluding `exclude`: when each was first seen, and whether a view
 * had the new version with the old filter.
 */
async function follow(client, before, exclude, latencies) {
  let shownAt;
  let stale = false;
  const { at, view } = await pollView(
    client,
    (candidate) => {
      if (!(candidate?.version > before)) return false;
      shownAt ??= performance.now();
      if (candidate.config?.tools?.exclude?.[0] === exclude) return true;
      stale = true;
      return false;
    },
    { latencies },
  );
  return { shownAt, appliedAt: at, stale, view };
}

// ── 2. throughput ───────────────────────────────────────────────────────────

async function measureThroughput({ cluster, secretKey, reps, calls, cleanup }) {
  const databaseUrl = await postgres.newDatabase(cluster);
  // One state dir each for the whole suite: eras.json carries over, as in a real worker's.
  const dirs = { file: tempDir('file'), pg: tempDir('pg') };
  cleanup(() => Object.values(dirs).forEach((d) => d.remove()));
  const options = {
    file: { stateDir: dirs.file.dir, sockets: IN_FLIGHT },
    pg: { stateDir: dirs.pg.dir, databaseUrl, workerId: 'bench-pg', secretKey, sockets: IN_FLIGHT },
  };
  const keys = ['file', 'pg'];
  // The same server added through each worker's API, once: the file store keeps it in mcp_servers.json, PostgreSQL in its table.
  for (const key of keys) {
    const started = await worker(cleanup, options[key]);
    await started.ready;
    const added = await started.client.request('POST', '/api/mcp/servers', { name: SERVER, ...ECHO_CONFIG });
    if (added.status !== 201) throw new Error(`${key}: POST /api/mcp/servers answered ${added.status}: ${added.text}`);
    await pollView(started.client, isReady, { gapMs: 20 });
    await started.stop();
  }
  await quiet();

  const modes = { seq: 1, concurrent: IN_FLIGHT };
  const samples = Object.fromEntries(Object.keys(modes).map((mode) => [mode, { file: [], pg: [] }]));
  // Per round (a chunk on each, back to back): PostgreSQL's calls/s over the file store's.
  const paired = Object.fromEntries(Object.keys(modes).map((mode) => [mode, []]));
  for (let rep = 0; rep < reps; rep += 1) {
    // Fresh workers every repetition: where the scheduler puts a worker and its server sticks for their lives.
    const workers = {};
    for (let k = 0; k < keys.length; k += 1) {
      const key = keys[(rep + k) % keys.length];
      workers[key] = await worker(cleanup, options[key]);
      await workers[key].ready;
      await pollView(workers[key].client, isReady, { gapMs: 20 });
      await callBurst(workers[key].client, calls / 2, 1); // warm-up
    }
    for (const [mode, inFlight] of Object.entries(modes)) {
      const total = { file: 0, pg: 0 };
      for (let round = 0; round < calls / CHUNK; round += 1) {
        const took = {};
        for (let k = 0; k < keys.length; k += 1) {
          const key = keys[(round + rep + k) % keys.length];
          took[key] = await callBurst(workers[key].client, CHUNK, inFlight);
          total[key] += took[key];
        }
        paired[mode].push(took.file / took.pg);
      }
      for (const key of keys) samples[mode][key].push((calls / total[key]) * 1000);
      log(`throughput rep ${rep + 1} ${mode}: file ${samples[mode].file.at(-1).toFixed(0)}, pg ${samples[mode].pg.at(-1).toFixed(0)} calls/s`);
    }
    for (const key of keys) await workers[key].stop();
    await quiet();
  }

  const stats = Object.fromEntries(
    Object.keys(modes).map((mode) => [mode, { file: summarize(samples[mode].file), pg: summarize(samples[mode].pg), paired: median(paired[mode]) }]),
  );
  const label = { seq: 'sequential', concurrent: `${IN_FLIGHT} in flight` };
  const rows = Object.keys(modes).flatMap((mode) => [
    [label[mode], 'file store (baseline)', fmtRange(stats[mode].file, 0), '1.00×', '1.00×'],
    [label[mode], 'PostgreSQL', fmtRange(stats[mode].pg, 0), `${(stats[mode].pg.median / stats[mode].file.median).toFixed(2)}×`, `${stats[mode].paired.toFixed(2)}×`],
  ]);
  const markdown =
    `**Tool-call throughput** (${calls} \`echo\` calls per repetition and mode through \`POST /api/mcp/tools/${SERVER}__echo/call\`, ` +
    `keep-alive; the same worker on each store, fresh processes every repetition, taking turns in ${CHUNK}-call chunks; ` +
    'server `fixtures/echo-server.mjs`)\n\n' +
    table(['calls', 'store', 'calls/s: median (min–max)', 'vs file store', 'vs file store, median of paired rounds'], rows);
  const targets = Object.keys(modes).map((mode) => {
    const r = stats[mode].pg.median / stats[mode].file.median;
    return {
      name: `tool calls (${label[mode]}) on PostgreSQL ≥ ${THROUGHPUT_TARGET}× the file store`,
      value: `${r.toFixed(3)}× (paired rounds: ${stats[mode].paired.toFixed(3)}×; ${fmt(stats[mode].pg.median, 0)} vs ${fmt(stats[mode].file.median, 0)} calls/s)`,
      pass: r >= THROUGHPUT_TARGET,
    };
  });
  return { stats, targets, markdown };
}

// ── 3. cold start ───────────────────────────────────────────────────────────

async function measureColdStart({ cluster, secretKey, reps, cleanup }) {
  const databaseUrl = await postgres.newDatabase(cluster);
  const dirs = { file: tempDir('cold-file'), pg: tempDir('cold-pg'), input: tempDir('cold-import') };
  cleanup(() => Object.values(dirs).forEach((d) => d.remove()));
  // The same 200 servers imported into each store, as a user would bring them.
  const file = join(dirs.input.dir, 'servers.json');
  const mcpServers = Object.fromEntries(
    Array.from({ length: COLD_SERVERS }, (_, i) => [`s${String(i).padStart(3, '0')}`, { command: process.execPath, args: [MINI_SERVER] }]),
  );
  writeFileSync(file, JSON.stringify({ mcpServers }));
  await importServers(file, { stateDir: dirs.file.dir });
  await importServers(file, { stateDir: dirs.pg.dir, databaseUrl, secretKey });
  const options = {
    file: { stateDir: dirs.file.dir, startupConcurrency: COLD_CONCURRENCY },
    pg: { stateDir: dirs.pg.dir, databaseUrl, workerId: 'bench-cold', secretKey, startupConcurrency: COLD_CONCURRENCY },
  };

  /**
   * One start, then stopped: ms from spawn to /readyz 200, to every server
   * ready in GET /api/mcp/servers (polled every LIST_POLL_MS, revalidated with
   * its ETag), and to the startup summary (with its text).
   */
  const startOnce = async (key) => {
    await quiet();
    const w = await worker(cleanup, options[key]);
    for (;;) {
      if ((await w.client.request('GET', '/readyz')).status === 200) break;
      await sleep(5);
    }
    const readyzAt = performance.now();
    let listedAtReadyz;
    let staleAtReadyz;
    let etag;
    for (;;) {
      const list = await w.client.request('GET', '/api/mcp/servers', undefined, etag === undefined ? {} : { 'if-none-match': etag });
      if (list.status === 200) {
        etag = list.headers.etag;
        const servers = list.json.servers;
        listedAtReadyz ??= stateCounts(servers);
        // The previous run's last states (`stopped`) or no servers at all: this run's are not listed yet.
        staleAtReadyz ??= servers.length < COLD_SERVERS || servers.some((view) => view.state === 'stopped');
        if (servers.length === COLD_SERVERS && servers.every((view) => view.ready)) break;
      } else if (list.status !== 304) throw new Error(`${key}: GET /api/mcp/servers answered ${list.status}`);
      await sleep(LIST_POLL_MS);
    }
    const allReadyAt = performance.now();
    const summary = await w.ready;
    await w.stop();
    return {
      readyz: readyzAt - w.spawnedAt,
      allReady: allReadyAt - w.spawnedAt,
      summary: summary.at - w.spawnedAt,
      summaryLine: summary.line.split('.')[0],
      listedAtReadyz,
      staleAtReadyz,
    };
  };
  // First starts: each store's worker probes every server's era once (eras.json keeps the verdicts).
  for (const key of ['file', 'pg']) log(`cold start ${key} first start (eras probed): all ready ${(await startOnce(key)).allReady.toFixed(0)} ms`);

  const raw = { file: [], pg: [] };
  await alternate(['file', 'pg'], reps, async (key) => {
    const r = await startOnce(key);
    raw[key].push(r);
    log(
      `cold start ${key} rep ${raw[key].length}: /readyz ${r.readyz.toFixed(0)} ms (listed then: ${r.listedAtReadyz}), ` +
        `all ready ${r.allReady.toFixed(0)} ms, summary "${r.summaryLine}" at ${r.summary.toFixed(0)} ms`,
    );
    return r.allReady;
  });
  await quiet();

  const fields = ['readyz', 'allReady', 'summary'];
  const stats = Object.fromEntries(
    Object.entries(raw).map(([key, runs]) => [
      key,
      {
        ...Object.fromEntries(fields.map((field) => [field, summarize(runs.map((r) => r[field]))])),
        summaryLines: [...new Set(runs.map((r) => r.summaryLine))],
        listedAtReadyz: [...new Set(runs.map((r) => r.listedAtReadyz))],
        staleAtReadyz: runs.filter((r) => r.staleAtReadyz).length,
      },
    ]),
  );
  const vs = (key, field) => `${(stats[key][field].median / stats.file[field].median).toFixed(2)}×`;
  const row = (key, label) => [
    label,
    `${fmtRange(stats[key].readyz, 0)} (${stats[key].listedAtReadyz.join(' / ')})`,
    vs(key, 'readyz'),
    fmtRange(stats[key].allReady, 0),
    vs(key, 'allReady'),
    `${fmtRange(stats[key].summary, 0)}: "${stats[key].summaryLines.join('" / "')}"`,
  ];
  // A store whose worker said ready before it listed this run's servers.
  const early = ['file', 'pg'].filter((key) => stats[key].staleAtReadyz > 0);
  const markdown =
    `**Cold start with ${COLD_SERVERS} servers** (real enabled servers, \`fixtures/mini-server.mjs\`, imported with \`mcp-fleet import\` ` +
    `into each store; \`serve --startup-concurrency ${COLD_CONCURRENCY}\`; ms from spawning the worker, after a first start of each that probed the servers' eras; ` +
    `"all ready": every server \`ready\` in \`GET /api/mcp/servers\`, polled every ${LIST_POLL_MS} ms with its ETag)\n\n` +
    table(['store', 'spawn → /readyz 200 (servers listed then, by state)', 'vs file store', 'spawn → all ready', 'vs file store', 'spawn → startup summary printed'], [
      row('file', 'file store (baseline)'),
      row('pg', 'PostgreSQL'),
    ]) +
    early
      .map(
        (key) =>
          `\n\n${key === 'pg' ? 'On PostgreSQL' : 'On the file store'} /readyz answered 200 (and the summary was printed) in ${stats[key].staleAtReadyz} of ${reps} starts ` +
          `before the worker listed this run's servers (listed then: ${stats[key].listedAtReadyz.join(' / ')}): its /readyz and summary figures ` +
          'are not comparable with the other store\'s; "all ready" is.',
      )
      .join('');
  const targets = [
    {
      name: `cold start with ${COLD_SERVERS} servers on PostgreSQL vs the file store (informational)`,
      value:
        `all ready ${vs('pg', 'allReady')} (${fmt(stats.pg.allReady.median, 0)} vs ${fmt(stats.file.allReady.median, 0)} ms); ` +
        `/readyz ${vs('pg', 'readyz')} (${fmt(stats.pg.readyz.median, 0)} vs ${fmt(stats.file.readyz.median, 0)} ms${early.length > 0 ? ', see the note under the table' : ''})`,
      pass: null,
    },
  ];
  return { stats, targets, markdown };
}

// ── refresh storm ───────────────────────────────────────────────────────────

const oauthFixtures = await import('../../test/oauth/servers.ts');
const STORM_CALLS = 20;

/**
 * `count` workers on a fresh database behind one public URL (nobody listens
 * there: the consent's callback is sent to the first worker), an OAuth
 * server consented once; resolves with their clients once it is ready on all.
 */
async function consentedWorkers({ cluster, secretKey, count, mcpUrl, cleanup }) {
  const databaseUrl = await postgres.newDatabase(cluster);
  const publicUrl = 'http://127.0.0.1:9';
  const workers = [];
  for (let i = 1; i <= count; i++) {
    workers.push(await worker(cleanup, { databaseUrl, workerId: `w${i}`, secretKey, sockets: STORM_CALLS, args: ['--public-url', publicUrl] }));
  }
  await consent(workers, 'remote', mcpUrl);
  return workers;
}

/**
 * Adds the OAuth server `name`, begins its consent on the second worker (the
 * first when alone) and finishes it on the first; resolves with the ms from
 * the callback's answer until each worker shows it ready (polled every 10 ms).
 */
async function consent(workers, name, mcpUrl) {
  const server = { type: 'remote', url: mcpUrl, transport: 'streamable_http', timeout_seconds: 15, auth: { kind: 'oauth' } };
  const added = await workers[0].client.request('POST', '/api/mcp/servers', { name, ...server });
  if (added.status !== 201) throw new Error(`adding the OAuth server: ${added.status} ${added.text}`);
  const stateOn = async (w, state, gapMs) => {
    const until = performance.now() + 30_000;
    while ((await w.client.request('GET', `/api/mcp/servers/${name}`)).json?.state !== state) {
      if (performance.now() > until) throw new Error(`${name} not ${state} on a worker`);
      await sleep(gapMs);
    }
  };
  for (const w of workers) await stateOn(w, 'needs_reauth', 20);
  const begun = await (workers[1] ?? workers[0]).client.request('POST', `/api/mcp/servers/${name}/auth`);
  const callback = await oauthFixtures.consentAsUser(begun.json.authorization_url, 'alice', (at) => {
    const url = new URL(at);
    return fetch(`${workers[0].url}${url.pathname}${url.search}`);
  });
  if (callback.status !== 200) throw new Error(`consent: ${callback.status} ${callback.text}`);
  const start = performance.now();
  return Promise.all(
    workers.map(async (w) => {
      await stateOn(w, 'ready', 10);
      return performance.now() - start;
    }),
  );
}

/** A consent finished on one worker of three: how soon every worker is ready, `reps` consents. */
async function measureConsentPropagation({ fleet, mcpUrl, reps }) {
  const latencies = [];
  for (let rep = 0; rep < reps; rep++) {
    const ms = await consent(fleet, `consent${rep}`, mcpUrl);
    log(`consent propagation rep ${rep + 1}: ready after ${ms.map((m) => m.toFixed(0)).join(', ')} ms`);
    latencies.push(...ms);
  }
  const stats = { ...summarize(latencies), p99: percentile(latencies, 99) };
  return {
    stats,
    target: {
      name: 'a consent finished on one of 3 workers: every worker ready ≤ 1 s (p99)',
      value: `p99 ${fmt(stats.p99, 0)} ms`,
      pass: stats.p99 <= 1000,
    },
  };
}

/** One storm: the held access token refused, STORM_CALLS calls on each worker at once. */
async function storm(workers, as, mcp) {
  mcp.refuseTokensSoFar();
  const before = as.tokenRequests.length;
  const start = performance.now();
  const answers = await Promise.all(
    workers.flatMap((w) =>
      Array.from({ length: STORM_CALLS }, (_, i) => w.client.request('POST', '/api/mcp/tools/remote__echo/call', { arguments: { text: `${i}` } })),
    ),
  );
  const ms = performance.now() - start;
  const failed = answers.filter((a) => a.status !== 200 || a.json?.details?.is_error !== false).length;
  const grants = as.tokenRequests.slice(before).filter((grant) => grant === 'refresh_token').length;
  const states = await Promise.all(workers.map(async (w) => (await w.client.request('GET', '/api/mcp/servers/remote')).json?.state));
  return { ms, failed, grants, stuck: states.filter((state) => state !== 'ready').length };
}

async function measureRefreshStorm({ cluster, secretKey, reps, cleanup }) {
  const as = await oauthFixtures.startAuthorizationServer({ accessTokenTtl: 600 });
  cleanup(() => as.close());
  const mcp = await oauthFixtures.startMcpResourceServer(as.issuer);
  cleanup(() => mcp.close());
  const fleet = await consentedWorkers({ cluster, secretKey, count: 3, mcpUrl: mcp.url, cleanup });
  const alone = await consentedWorkers({ cluster, secretKey, count: 1, mcpUrl: mcp.url, cleanup });
  const propagation = await measureConsentPropagation({ fleet, mcpUrl: mcp.url, reps });
  const raw = { alone: [], fleet: [] };
  await alternate(['alone', 'fleet'], reps, async (key) => {
    const r = await storm(key === 'fleet' ? fleet : alone, as, mcp);
    raw[key].push(r);
    log(`refresh storm ${key} rep ${raw[key].length}: ${r.grants} refresh grant(s), ${r.ms.toFixed(0)} ms, ${r.failed} failed, ${r.stuck} not ready`);
    return r.ms;
  });
  const stats = Object.fromEntries(
    Object.entries(raw).map(([key, runs]) => [
      key,
      {
        ms: summarize(runs.map((r) => r.ms)),
        grants: runs.map((r) => r.grants),
        failed: runs.reduce((n, r) => n + r.failed, 0),
        stuck: runs.reduce((n, r) => n + r.stuck, 0),
      },
    ]),
  );
  const row = (key, label, calls) => [
    label,
    String(calls),
    stats[key].grants.join(', '),
    fmtRange(stats[key].ms, 0),
    `${(stats[key].ms.median / stats.alone.ms.median).toFixed(2)}×`,
    `${stats[key].failed} failed, ${stats[key].stuck} needing consent`,
  ];
  const markdown =
    '**Refresh storm** (an OAuth server, oidc-provider rotating refresh tokens and revoking the grant on a reused one; each repetition the ' +
    'access token held is revoked at the resource server, which answers 401, while every worker makes ' +
    `${STORM_CALLS} concurrent \`echo\` calls through \`POST /api/mcp/tools/:tool/call\`; ms until every call succeeded)

` +
    table(['workers', 'calls', 'refresh grants per revoked token', 'ms until all succeeded', 'vs one worker', 'outcome'], [
      row('alone', 'one worker (baseline)', STORM_CALLS),
      row('fleet', '3 workers on PostgreSQL', 3 * STORM_CALLS),
    ]);
  const onePerToken = [...stats.fleet.grants, ...stats.alone.grants].every((n) => n === 1);
  const targets = [
    propagation.target,
    {
      name: 'refresh grants per access token revoked during 3 workers x 20 calls (target 1)',
      value: `${stats.fleet.grants.join(', ')} (one worker alone: ${stats.alone.grants.join(', ')}); ${stats.fleet.failed + stats.alone.failed} calls failed`,
      pass: onePerToken && stats.fleet.failed + stats.alone.failed === 0 && stats.fleet.stuck + stats.alone.stuck === 0,
    },
    {
      name: 'refresh storm: ms until all 60 calls succeeded vs one worker making 20 (informational)',
      value: `${fmt(stats.fleet.ms.median, 0)} vs ${fmt(stats.alone.ms.median, 0)} ms`,
      pass: null,
    },
  ];
  return { stats: { ...stats, consentReadyMs: propagation.stats }, targets, markdown };
}

// ── the suite ───────────────────────────────────────────────────────────────

await runSuite('fleet', async ({ quick, reps }) => {
  /** Run last first in `finally`: workers before the cluster they use. */
  const undo = [];
  const cleanup = (fn) => undo.push(fn);
  try {
    const cluster = await postgres.startPostgres();
    cleanup(() => cluster.destroy());
    const secretKey = secretKeyText();
    log(`PostgreSQL cluster on port ${cluster.port}`);
    const propagation = await measurePropagation({ cluster, secretKey, patches: quick ? 15 : 50, cleanup });
    const throughput = await measureThroughput({ cluster, secretKey, reps, calls: quick ? 500 : 2000, cleanup });
    const cold = await measureColdStart({ cluster, secretKey, reps, cleanup });
    const refreshStorm = await measureRefreshStorm({ cluster, secretKey, reps, cleanup });
    return {
      title: 'Fleet: several workers on one PostgreSQL',
      propagation: propagation.stats,
      throughput: throughput.stats,
      coldStart: cold.stats,
      refreshStorm: refreshStorm.stats,
      targets: [...propagation.targets, ...throughput.targets, ...cold.targets, ...refreshStorm.targets],
      markdown: [propagation.markdown, throughput.markdown, cold.markdown, refreshStorm.markdown].join('\n\n'),
    };
  } finally {
    for (const fn of undo.reverse()) {
      try {
        await fn();
      } catch (error) {
        log(`cleanup: ${error.message}`);
      }
    }
  }
});
