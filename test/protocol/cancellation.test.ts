// Cancellation both ways: an aborted call tells the server
// (notifications/cancelled), and a server cancelling its own request to the
// client aborts the host callback that serves it (extra.signal).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test, vi } from 'vitest';
import { fixtureCommand } from '../fixtures/index.js';
import { catalogServer, startHost, textOf, type Running } from './helpers.js';

let running: Running | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

describe('cancellation', () => {
  test('aborting host.callTool sends notifications/cancelled for that request', async () => {
    running = await startHost(
      (dir) => ({
        h: {
          type: 'local',
          command: fixtureCommand('healthy'),
          env: { FIXTURE_PID_FILE: join(dir, 'h.pid'), FIXTURE_CANCEL_LOG: join(dir, 'cancel.log') },
        },
      }),
      ['h'],
    );
    const controller = new AbortController();
    const call = running.host.callTool('h__wait_for_cancel', {}, { signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    const result = await call;
    expect(result.details.is_error).toBe(true);
    expect(textOf(result)).toMatch(/cancel/);
    const log = join(running.dir, 'cancel.log');
    await vi.waitFor(() => expect(existsSync(log) && readFileSync(log, 'utf8')).toMatch(/^cancelled \d+\n$/), { timeout: 20_000 });
    // Journaled as what it was: cancelled, not a failed call.
    const called = running.host.events().filter((event) => event.type === 'tool.called' && event.tool === 'h__wait_for_cancel');
    expect(called).toMatchObject([{ outcome: 'cancelled' }]);
  });

  test("a server's cancellation of its elicitation request aborts the host's elicitation callback", async () => {
    const asked: string[] = [];
    let abortReason: unknown;
    running = await startHost((dir) => ({ cat: catalogServer(dir, 'cat') }), ['cat'], {
      elicitation: (request, { signal }) =>
        new Promise((resolve) => {
          asked.push(request.message);
          const onAbort = () => {
            abortReason = signal.reason;
            resolve({ action: 'cancel' });
          };
          // The cancellation can be in before the callback runs: the signal is aborted already then.
          if (signal.aborted) onAbort();
          else signal.addEventListener('abort', onAbort, { once: true });
        }),
    });
    const result = await running.host.callTool('cat__ask_then_cancel', {});
    expect(textOf(result)).toMatch(/^cancelled: .*the server changed its mind$/);
    // The fixture's request is the first it sends (id 0): the SDK alone ignores a cancellation of id 0.
    await vi.waitFor(() => expect(abortReason).toBe('the server changed its mind'), { timeout: 10_000 });
    expect(asked).toEqual(['Your name?']);
  });
});
