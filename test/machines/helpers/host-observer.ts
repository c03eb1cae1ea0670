// Watches one server actor the way `createMcpHost` does: journals every
// top-level transition and every (un)registration, feeds the journal into the
// @xstate/store projection, and closes each connection the actor releases.
import type { ActorRefFrom } from 'xstate';
import type { serverMachine } from '../../../src/machines/server.machine.js';
import { topState } from '../../../src/machines/server.queries.js';
import { toResponse } from '../../../src/services/config/credentials.js';
import { createJournal } from '../../../src/services/journal/journal.js';
import { createProjection } from '../../../src/services/journal/projection.js';
import type { ServerState } from '../../../src/services/journal/events.js';
import { filterTools } from '../../../src/services/connection/connection.js';

type ServerRef = ActorRefFrom<typeof serverMachine>;

export interface HostObserver {
  /** Tool names registered now, or null when none are (tracked from the emitted events only). */
  readonly registered: readonly string[] | null;
  /** Every emitted event out of order: a register while registered, an unregister while not. */
  readonly violations: readonly string[];
  readonly projection: ReturnType<typeof createProjection>;
  readonly journal: ReturnType<typeof createJournal>;
  stop(): void;
}

export function observeLikeHost(ref: ServerRef): HostObserver {
  const journal = createJournal({ file: () => null });
  const projection = createProjection();
  journal.subscribe((event) => projection.apply(event));
  const violations: string[] = [];
  let registered: string[] | null = null;

  const { name } = ref.getSnapshot().context;
  let configured: unknown = null;
  let last: ServerState | null = null;
  const observe = () => {
    const snapshot = ref.getSnapshot();
    if (snapshot.context.config !== configured) {
      configured = snapshot.context.config;
      journal.append({ type: 'server.configured', server: name, actor: ref.id, config: toResponse(snapshot.context.config) });
    }
    const state = topState(snapshot);
    if (state === last) return;
    const failed = state === 'error' || state === 'needs_reauth';
    journal.append({
      type: 'server.transitioned',
      server: name,
      actor: ref.id,
      from: last,
      to: state,
      error: failed ? snapshot.context.error : null,
      error_kind: failed ? snapshot.context.errorKind : null,
    });
    last = state;
  };

  const subscriptions = [
    ref.on('tools.register', ({ live, filter }) => {
      // A register while registered is a replace (a changed tool filter), but only in `ready`.
      if (!ref.getSnapshot().matches('ready')) {
        violations.push(`tools.register in ${JSON.stringify(ref.getSnapshot().value)}`);
        return;
      }
      const tools = filterTools(live.connection.tools, filter);
      registered = tools.map((tool) => `${name}__${tool.name}`);
      journal.append({
        type: 'tools.registered',
        server: name,
        tools: tools.map((tool) => ({
          name: `${name}__${tool.name}`,
          original: tool.name,
          description: tool.description ?? '',
        })),
      });
    }),
    ref.on('tools.unregister', () => {
      if (!registered) violations.push('tools.unregister while not registered');
      journal.append({ type: 'tools.unregistered', server: name, tools: registered ?? [] });
      registered = null;
    }),
    ref.on('connection.release', ({ live }) => void live.connection.close()),
    ref.subscribe({ next: observe, complete: observe }),
  ];
  observe();

  return {
    get registered() {
      return registered;
    },
    violations,
    projection,
    journal,
    stop: () => subscriptions.forEach((subscription) => subscription.unsubscribe()),
  };
}
