// 8. Tool search (src/catalog/search): how well and how fast the fleet's
// tools are ranked for a natural-language query. The catalog is the real
// tool lists of five servers (bench/fixtures/search/*.json, dumped by
// bench/tools/dump-search-fixtures.js) mixed into 5,000 generated tools of
// other plausible servers (bench/fixtures/search/catalog.js, seeded).
//
// Quality: 75 queries phrased as users ask for a task (never the tool's
// name), each with the tools that would do it; a query counts as found when
// one of them ranks in the top 5. Written before any tuning; the odd ones
// were held out while the synonyms and weights were chosen, so the held-out
// row is the honest figure. The baseline is plain BM25+ of the same library
// (MiniSearch defaults: no stemming, no synonyms, no field weights) over the
// name, description and parameter names, in the same run.
//
// Speed: search latency at 5,000+ tools (wall time, and the process's CPU
// time to tell a wait for a core on a shared machine apart), also with every
// query word no tool uses looked up in the word vectors cold, and a re-listed
// server with one tool changed: the 25-tool Playwright server, and a
// 5,000-tool server both as mcp-fleet's catalog sync hands it over
// (unchanged tools are the same objects) and re-parsed (all-new objects,
// each compared in depth: informational).
//
//   node --expose-gc bench/suites/search.js [--quick] [--misses]   (--misses: each query not found in the top 5, on stderr)
import MiniSearch from 'minisearch';
import { register } from 'tsx/esm/api';
import { generatedTools, queries, realTools, searchable } from '../fixtures/search/catalog.js';
import { fmt, fmtRange, median, percentile, summarize, table } from '../lib/stats.js';
import { log, runSuite } from '../lib/suite.js';
import { contextBytes, onDemandStartup } from '../lib/deferred.js';

register();
const { createToolIndex } = await import('../../src/catalog/search/tool-index.ts');

const GENERATED = 5000;
const TOP = 5;
/** MRR counts a first hit down to this rank (MRR@10). */
const MRR_DEPTH = 10;
const TARGETS = { recall: 0.9, searchP99Ms: 2, updateMs: 5 };

function byServer(tools) {
  const servers = new Map();
  for (const tool of tools) {
    if (!servers.has(tool.server)) servers.set(tool.server, []);
    servers.get(tool.server).push(tool);
  }
  return servers;
}

function fleetIndex(tools) {
  const index = createToolIndex();
  for (const [server, list] of byServer(tools)) index.setServerTools(server, list);
  return { label: 'mcp-fleet', search: (query) => index.search(query, { limit: MRR_DEPTH }).map((hit) => hit.tool.name), index };
}

function plainBm25(tools) {
  const engine = new MiniSearch({ fields: ['name', 'description', 'parameterNames'] });
  engine.addAll(
    tools.map((tool) => ({
      id: tool.name,
      name: tool.name,
      description: tool.description,
      parameterNames: Object.keys(tool.parameters.properties ?? {}).join(' '),
    })),
  );
  return { label: 'plain BM25 (baseline)', search: (query) => engine.search(query).slice(0, MRR_DEPTH).map((result) => result.id) };
}

// ── Sections: each takes the shared context ({ catalog, reps, quick, showMisses }) and returns
// { heading, markdown, targets, stats }; the report shows them in the order of SECTIONS, so a new
// measurement (context bytes, startup) is one more function there. ──

function quality({ catalog, showMisses }) {
  const contenders = { baseline: plainBm25(catalog), fleet: fleetIndex(catalog) };
  const cases = queries();
  /** contender → the rank of each query's first expected tool (0: not in the top MRR_DEPTH). */
  const ranks = Object.fromEntries(
    Object.entries(contenders).map(([key, contender]) => [
      key,
      cases.map((q) => {
        const ranked = contender.search(q.query);
        const rank = ranked.findIndex((name) => q.expect.includes(name)) + 1;
        if (showMisses && (rank === 0 || rank > TOP)) log(`miss ${contender.label} [${q.split}] "${q.query}" → ${ranked.slice(0, TOP).join(', ')}`);
        return rank;
      }),
    ]),
  );
  const splits = { all: () => true, tune: (q) => q.split === 'tune', 'held-out': (q) => q.split === 'held-out' };
  const score = (key, keep) => {
    const kept = ranks[key].filter((_, i) => keep(cases[i]));
    return {
      queries: kept.length,
      recall: kept.filter((rank) => rank >= 1 && rank <= TOP).length / kept.length,
      mrr: kept.reduce((sum, rank) => sum + (rank >= 1 ? 1 / rank : 0), 0) / kept.length,
    };
  };
  const stats = Object.fromEntries(
    Object.entries(splits).map(([split, keep]) => [split, { baseline: score('baseline', keep), fleet: score('fleet', keep) }]),
  );
  const rows = Object.keys(splits).flatMap((split) =>
    Object.entries(contenders).map(([key, contender]) => {
      const s = stats[split][key];
      const base = stats[split].baseline;
      return [split, contender.label, String(s.queries), s.recall.toFixed(2), s.mrr.toFixed(2), `${(s.recall / base.recall).toFixed(2)}×`, `${(s.mrr / base.mrr).toFixed(2)}×`];
    }),
  );
  const recall = (split) => stats[split].fleet.recall;
  return {
    heading: `Quality: ${catalog.length} tools (${catalog.length - GENERATED} real, ${GENERATED} generated), ${cases.length} queries`,
    markdown: table(['queries', 'ranking', 'n', `recall@${TOP}`, `MRR@${MRR_DEPTH}`, 'recall vs baseline', 'MRR vs baseline'], rows),
    targets: [
      { name: `search recall@${TOP} ≥ ${TARGETS.recall} (all queries)`, value: recall('all').toFixed(2), pass: recall('all') >= TARGETS.recall },
      { name: `search recall@${TOP} ≥ ${TARGETS.recall} (held-out half)`, value: recall('held-out').toFixed(2), pass: recall('held-out') >= TARGETS.recall },
    ],
    stats,
  };
}

function speed({ catalog, reps, quick }) {
  const cases = queries();
  const rounds = quick ? 5 : 20;
  const fleet = fleetIndex(catalog).index;
  for (let i = 0; i < 3; i += 1) for (const q of cases) fleet.search(q.query); // warm-up: JIT and the synonym table
  const searchP50 = [];
  const searchP99 = [];
  // On a shared machine a search can wait for a core: its process CPU time (GC threads included) tells that wait apart.
  const cpuP99 = [];
  for (let rep = 0; rep < reps; rep += 1) {
    globalThis.gc?.();
    const samples = [];
    const cpu = [];
    for (let round = 0; round < rounds; round += 1) {
      for (const q of cases) {
        const cpuBefore = process.cpuUsage();
        const started = performance.now();
        fleet.search(q.query);
        samples.push(performance.now() - started);
        const { user, system } = process.cpuUsage(cpuBefore);
        cpu.push((user + system) / 1000);
      }
    }
    searchP50.push(percentile(samples, 50));
    searchP99.push(percentile(samples, 99));
    cpuP99.push(percentile(cpu, 99));
    log(`search rep ${rep + 1}: p50 ${(searchP50.at(-1) * 1000).toFixed(0)} µs, p99 ${(searchP99.at(-1) * 1000).toFixed(0)} µs (CPU ${(cpuP99.at(-1) * 1000).toFixed(0)} µs) over ${samples.length} searches`);
  }

  // The warm figures above answer a query word no tool uses from the index's memory of related
  // terms after the first round; here each query runs once on a fresh index, so every such word is
  // looked up in the word vectors for the first time (the index's own first look-up, which reads
  // the vectors of all its terms, is timed apart).
  const firstLookupMs = [];
  const coldP50 = [];
  const coldMax = [];
  for (let rep = 0; rep < reps; rep += 1) {
    const cold = fleetIndex(catalog).index;
    globalThis.gc?.();
    let started = performance.now();
    cold.search('qwertyuiop');
    firstLookupMs.push(performance.now() - started);
    const samples = cases.map((q) => {
      started = performance.now();
      cold.search(q.query);
      return performance.now() - started;
    });
    coldP50.push(percentile(samples, 50));
    coldMax.push(Math.max(...samples));
    log(`cold search rep ${rep + 1}: first look-up ${fmt(firstLookupMs.at(-1), 1)} ms, then p50 ${(coldP50.at(-1) * 1000).toFixed(0)} µs, max ${(coldMax.at(-1) * 1000).toFixed(0)} µs over ${samples.length} searches`);
  }

  // One tool changed in a re-listed server. mcp-fleet's catalog sync hands unchanged tools over as
  // the same objects (src/host/tool-search.ts keeps one searchable object per journal entry); a
  // caller re-parsing every list hands over all-new objects, each then compared in depth.
  const bigServer = generatedTools(GENERATED).map((tool) => searchable('big', { ...tool, inputSchema: tool.parameters }));
  const bigIndex = fleetIndex(bigServer).index;
  const keptObjects = (tools) => tools.slice();
  const freshObjects = (tools) => structuredClone(tools);
  const updates = [
    { what: `one tool changed, the 25-tool playwright server among ${catalog.length} tools`, index: fleet, server: 'playwright', tools: catalog.filter((t) => t.server === 'playwright'), relist: freshObjects, target: true },
    { what: `one tool changed, one ${GENERATED}-tool server, unchanged tools kept as objects`, index: bigIndex, server: 'big', tools: bigServer, relist: keptObjects, target: true },
    { what: `one tool changed, one ${GENERATED}-tool server, every object new`, index: bigIndex, server: 'big', tools: bigServer, relist: freshObjects, target: false },
  ];
  const updateRuns = 30;
  const updateStats = updates.map(({ what, index, server, tools, relist, target }) => {
    const p50s = [];
    const maxes = [];
    let version = 0;
    let current = tools;
    for (let rep = 0; rep < reps; rep += 1) {
      const samples = [];
      for (let run = 0; run < updateRuns; run += 1) {
        const next = relist(current);
        const at = (version += 1) % next.length;
        next[at] = { ...next[at], description: `${tools[at].description} (revision ${version})` };
        const started = performance.now();
        index.setServerTools(server, next);
        samples.push(performance.now() - started);
        current = next;
      }
      p50s.push(median(samples));
      maxes.push(Math.max(...samples));
    }
    log(`update ${what}: p50 ${fmt(median(p50s), 2)} ms, max ${fmt(Math.max(...maxes), 2)} ms`);
    return { what, target, p50: summarize(p50s), max: summarize(maxes) };
  });

  const buildMs = [];
  for (let rep = 0; rep < reps; rep += 1) {
    globalThis.gc?.();
    const started = performance.now();
    fleetIndex(catalog);
    buildMs.push(performance.now() - started);
  }

  const p99 = summarize(searchP99);
  const us = (summary) => ({ ...summary, median: summary.median * 1000, min: summary.min * 1000, max: summary.max * 1000 });
  const rows = [
    [`search, ${catalog.length} tools (${cases.length} queries × ${rounds} per repetition)`, 'p50 µs', fmtRange(us(summarize(searchP50)), 0)],
    [`search, ${catalog.length} tools`, 'p99 µs', fmtRange(us(p99), 0)],
    [`search, ${catalog.length} tools`, 'p99 µs of process CPU time', fmtRange(us(summarize(cpuP99)), 0)],
    [`search on a fresh index: every unknown query word looked up cold (${cases.length} queries once)`, 'p50 µs', fmtRange(us(summarize(coldP50)), 0)],
    [`search on a fresh index: every unknown query word looked up cold`, 'max µs', fmtRange(us(summarize(coldMax)), 0)],
    [`first search of a fresh index needing word vectors (gives each of its terms a vector)`, 'ms', fmtRange(summarize(firstLookupMs), 1)],
    ...updateStats.flatMap(({ what, p50, max }) => [
      [`setServerTools, ${what}`, `p50 ms (${updateRuns} per repetition)`, fmtRange(p50, 2)],
      [`setServerTools, ${what}`, 'max ms', fmtRange(max, 2)],
    ]),
    [`full build, ${catalog.length} tools (informational)`, 'ms', fmtRange(summarize(buildMs), 0)],
  ];
  return {
    heading: 'Speed',
    markdown: table(['what', 'measure', 'median (min–max) over repetitions'], rows),
    targets: [
      { name: `search p99 ≤ ${TARGETS.searchP99Ms} ms at ${catalog.length} tools`, value: `${fmt(p99.median, 2)} ms`, pass: p99.median <= TARGETS.searchP99Ms },
      ...updateStats.map(({ what, target, p50 }) => ({
        name: `update after ${what} ≤ ${TARGETS.updateMs} ms (p50)${target ? '' : ' (informational)'}`,
        value: `${fmt(p50.median, 2)} ms`,
        pass: target ? p50.median <= TARGETS.updateMs : null,
      })),
    ],
    stats: {
      searchP50Ms: summarize(searchP50),
      searchP99Ms: p99,
      searchCpuP99Ms: summarize(cpuP99),
      coldSearchP50Ms: summarize(coldP50),
      coldSearchMaxMs: summarize(coldMax),
      firstLookupMs: summarize(firstLookupMs),
      updates: updateStats,
      buildMs: summarize(buildMs),
    },
  };
}

/** Context bytes and on-demand startup (bench/lib/deferred.js) run a real host: mcp-fleet as it ships (dist/). */
const fleet = await import('../../dist/index.js');
const context = ({ catalog }) => contextBytes(fleet, catalog);
const startup = ({ reps, quick }) => onDemandStartup(fleet, { reps: quick ? 2 : Math.min(reps, 5) });

const SECTIONS = [quality, speed, context, startup];

await runSuite('search', async ({ reps, quick }) => {
  const catalog = [...realTools(), ...generatedTools(GENERATED)];
  const options = { catalog, reps, quick, showMisses: process.argv.includes('--misses') };
  const results = [];
  for (const section of SECTIONS) results.push(await section(options));
  return {
    title: `Tool search (${catalog.length} tools)`,
    stats: Object.fromEntries(SECTIONS.map((section, i) => [section.name, results[i].stats])),
    targets: results.flatMap((result) => result.targets),
    markdown: results.map((result) => `**${result.heading}**\n\n${result.markdown}`).join('\n\n'),
  };
});
