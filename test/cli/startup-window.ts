// What a client polling a starting worker sees: every answer, from the first
// moment the port accepts, checked against the configured servers. And the
// busy CPU loops that make the startup window wide enough to be hit.
import { spawn, type ChildProcess } from 'node:child_process';
import { TOKEN } from '../http/helpers.js';
export { freePort } from '../support/ports.js';

/** `count` processes spinning a CPU each, until `stop()`. */
export function busyLoops(count: number): { stop(): Promise<void> } {
  const loops: ChildProcess[] = Array.from({ length: count }, () =>
    spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }),
  );
  return {
    async stop() {
      await Promise.all(
        loops.map(
          (loop) =>
            new Promise<void>((done) => {
              if (loop.exitCode !== null || loop.signalCode !== null) return done();
              loop.once('exit', () => done());
              loop.kill('SIGKILL');
            }),
        ),
      );
    },
  };
}

export interface StartupWatch {
  /** Answers received (connection refusals are not answers). */
  answers: number;
  /** Answers in which some server was still `pending`: the window was really polled. */
  pending: number;
  /** Every answer that did not list every configured server, described. */
  wrong: string[];
}

/**
 * Polls `GET /api/mcp/servers` and `GET /api/mcp/servers/<name>` in turn at
 * `base` from now on (a refused connection is tried again at once) until
 * `done()` holds, then a few more times.
 */
export async function watchStartup(base: string, names: readonly string[], done: () => boolean): Promise<StartupWatch> {
  const watch: StartupWatch = { answers: 0, pending: 0, wrong: [] };
  const expected = [...names].sort();
  let after = 0;
  for (let turn = 0; after < 5; turn += 1) {
    if (done()) after += 1;
    const name = turn % 2 === 0 ? null : names[turn % names.length]!;
    const path = name === null ? '/api/mcp/servers' : `/api/mcp/servers/${name}`;
    let response: Response;
    try {
      response = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 2));
      continue;
    }
    const text = await response.text();
    watch.answers += 1;
    if (response.status !== 200) {
      watch.wrong.push(`${path}: ${response.status} ${text}`);
      continue;
    }
    const body = JSON.parse(text) as { servers?: Array<{ name: string; state: string }>; name?: string; state?: string };
    const views = name === null ? (body.servers ?? []) : [body as { name: string; state: string }];
    if (name === null && JSON.stringify(views.map((view) => view.name).sort()) !== JSON.stringify(expected)) {
      watch.wrong.push(`${path}: ${JSON.stringify(views.map((view) => view.name))}`);
    }
    if (name !== null && body.name !== name) watch.wrong.push(`${path}: ${text}`);
    if (views.some((view) => view.state === 'pending')) watch.pending += 1;
  }
  return watch;
}
