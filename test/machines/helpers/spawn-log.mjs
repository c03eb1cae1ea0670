// Runs the fixture given as argv[2] after appending one JSON line to
// SPAWN_LOG: `{ name: SPAWN_NAME, pid, at }` (at = Date.now() at start).
// Tests read it to see which servers were started, when, and whether their
// processes are still alive.
import { appendFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const log = process.env.SPAWN_LOG;
if (log) {
  appendFileSync(log, `${JSON.stringify({ name: process.env.SPAWN_NAME ?? null, pid: process.pid, at: Date.now() })}\n`);
}
await import(pathToFileURL(process.argv[2]).href);
