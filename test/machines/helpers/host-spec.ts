// An independent reference model of the host's lifecycle, written from
// docs/lifecycle.md (The host) rather than from the machine: a pure step
// function over plain facts. Each step also names the edges of the drawn
// diagram (diagrams/host.mmd) it takes, so the model test can show that every
// drawn edge was walked, and says what the host must do on the way.

/** The fake server's states the host reads (the real server machine's names and tag). */
export type FakeServerState = 'pending' | 'refreshing' | 'consenting' | 'needs_reauth' | 'ready' | 'gone';

export type Phase =
  | 'idle'
  | 'opening'
  | 'catchingUp'
  | 'failed'
  | 'running'
  | 'stoppingServers'
  | 'leavingFleet'
  | 'closing'
  | 'stopped';

export interface HostFacts {
  phase: Phase;
  /** Scenario: edits by another hand are applied. */
  watchConfig: boolean;
  /** Scenario: the host has a presence (a fleet list to be on). */
  listed: boolean;
  stopRequested: boolean;
  published: boolean;
  announced: boolean;
  /** The config region while running: `off` when not watched. */
  config: 'off' | 'idle' | 'reconciling' | 'awaitingIdle';
  rereadDue: boolean;
  /** The one published server; null before publishing. */
  server: FakeServerState | null;
  /** An attempt of the server is watched because tokens came during it. */
  watched: boolean;
  /** What the server actor received from the host, in order. */
  serverInbox: string[];
  registryInbox: string[];
  approvalsClosed: number;
  reconcileFailures: number;
  /** `start()` rejects: opening or catching up failed. */
  startFailed: boolean;
  /** `shutdown()` rejects: a step of stopping failed. */
  stopFailed: boolean;
}

export type HostModelEvent =
  | { type: 'host.start' }
  | { type: 'host.shutdown' }
  | { type: 'open.succeeds' }
  | { type: 'open.fails' }
  | { type: 'catchUp.succeeds' }
  | { type: 'catchUp.fails' }
  | { type: 'config.changed' }
  | { type: 'reconcile.clear' }
  | { type: 'reconcile.busy' }
  | { type: 'reconcile.fails' }
  | { type: 'idle.reached' }
  | { type: 'idle.fails' }
  | { type: 'tokens.stored' }
  | { type: 'server.goto'; to: FakeServerState }
  | { type: 'stopServers.done' }
  | { type: 'stopServers.fails' }
  | { type: 'leaveFleet.done' }
  | { type: 'leaveFleet.fails' }
  | { type: 'closeStores.done' }
  | { type: 'closeStores.fails' };

export function initialHostFacts(scenario: { watchConfig: boolean; listed: boolean }): HostFacts {
  return {
    phase: 'idle',
    ...scenario,
    stopRequested: false,
    published: false,
    announced: false,
    config: 'off',
    rereadDue: false,
    server: null,
    watched: false,
    serverInbox: [],
    registryInbox: [],
    approvalsClosed: 0,
    reconcileFailures: 0,
    startFailed: false,
    stopFailed: false,
  };
}

const SERVER_STATES: FakeServerState[] = ['pending', 'refreshing', 'consenting', 'needs_reauth', 'ready', 'gone'];

/** The work in flight in each phase (the fakes that can settle). */
export function inFlight(facts: HostFacts): string[] {
  const work: string[] = [];
  const byPhase: Partial<Record<Phase, string>> = {
    opening: 'open',
    catchingUp: 'catchUp',
    stoppingServers: 'stopServers',
    leavingFleet: 'leaveFleet',
    closing: 'closeStores',
  };
  const own = byPhase[facts.phase];
  if (own) work.push(own);
  if (facts.phase === 'running' && facts.config === 'reconciling') work.push('reconcile');
  if (facts.phase === 'running' && facts.config === 'awaitingIdle') work.push('awaitIdle');
  return work;
}

/** The long-lived actors that run in each phase. */
export function watchers(facts: HostFacts): string[] {
  const running = facts.phase === 'running';
  const bridged = facts.published && ['catchingUp', 'failed', 'running', 'stoppingServers'].includes(facts.phase);
  return [
    ...(bridged ? ['bridge'] : []),
    ...(running && facts.watchConfig ? ['configWatcher'] : []),
    ...(running ? ['tokenWatcher'] : []),
    ...(running && facts.listed ? ['announce'] : []),
  ].sort();
}

/** The events the world can produce in a state: settling work in flight, watchers' facts, the server moving, the caller. */
export function hostModelEvents(facts: HostFacts): HostModelEvent[] {
  // A stopped host takes nothing any more (its wiring sends it nothing).
  if (facts.phase === 'stopped') return [];
  const events: HostModelEvent[] = [{ type: 'host.start' }, { type: 'host.shutdown' }];
  const work = inFlight(facts);
  const settle: Record<string, HostModelEvent[]> = {
    open: [{ type: 'open.succeeds' }, { type: 'open.fails' }],
    catchUp: [{ type: 'catchUp.succeeds' }, { type: 'catchUp.fails' }],
    reconcile: [{ type: 'reconcile.clear' }, { type: 'reconcile.busy' }, { type: 'reconcile.fails' }],
    awaitIdle: [{ type: 'idle.reached' }, { type: 'idle.fails' }],
    stopServers: [{ type: 'stopServers.done' }, { type: 'stopServers.fails' }],
    leaveFleet: [{ type: 'leaveFleet.done' }, { type: 'leaveFleet.fails' }],
    closeStores: [{ type: 'closeStores.done' }, { type: 'closeStores.fails' }],
  };
  for (const name of work) events.push(...settle[name]!);
  const active = watchers(facts);
  if (active.includes('configWatcher')) events.push({ type: 'config.changed' });
  if (active.includes('tokenWatcher')) events.push({ type: 'tokens.stored' });
  // The server moves while the fleet is alive (it is let go of once its servers have stopped).
  if (facts.server !== null && facts.server !== 'gone' && ['catchingUp', 'failed', 'running', 'stoppingServers'].includes(facts.phase)) {
    for (const to of SERVER_STATES) if (to !== facts.server) events.push({ type: 'server.goto', to });
  }
  return events;
}

export interface HostStep {
  next: HostFacts;
  /** Edges of diagrams/host.mmd taken, as its lines spell them (`from --> to : label`). */
  edges: string[];
}

/** The host's answer to one event. */
export function hostStep(facts: HostFacts, event: HostModelEvent): HostStep {
  const f: HostFacts = { ...facts, serverInbox: [...facts.serverInbox], registryInbox: [...facts.registryInbox] };
  const edges: string[] = [];
  const take = (edge: string) => edges.push(edge);
  if (event.type === 'open.fails' || event.type === 'catchUp.fails') f.startFailed = true;
  if (event.type === 'stopServers.fails' || event.type === 'leaveFleet.fails' || event.type === 'closeStores.fails') f.stopFailed = true;

  const enterRunning = () => {
    f.phase = 'running';
    if (f.watchConfig) {
      take('running_config_deciding --> running_config_watching : always [watchesConfig]');
      f.config = 'idle';
    } else {
      take('running_config_deciding --> running_config_unwatched : always');
      f.config = 'off';
    }
    if (f.listed) {
      take('running_presence_deciding --> running_presence_listed : always [listed]');
      f.announced = true;
    } else take('running_presence_deciding --> running_presence_unlisted : always');
  };
  const enterStopping = () => {
    f.approvalsClosed += 1;
    f.config = 'off';
    if (f.published) {
      take('stopping_deciding --> stopping_stoppingServers : always [published]');
      f.phase = 'stoppingServers';
      f.registryInbox.push('registry.shutdown');
    } else {
      take('stopping_deciding --> stopping_closing : always');
      f.phase = 'closing';
    }
  };
  const reconcileAgain = () => {
    f.config = 'reconciling';
    f.rereadDue = false;
  };

  switch (event.type) {
    case 'host.start':
      if (f.phase === 'idle') {
        take('idle --> starting : host.start');
        f.phase = 'opening';
      }
      break;
    case 'host.shutdown':
      if (f.phase === 'idle') {
        take('idle --> stopping : host.shutdown');
        enterStopping();
      } else if (f.phase === 'opening' || f.phase === 'catchingUp') {
        take('starting --> starting : host.shutdown');
        f.stopRequested = true;
      } else if (f.phase === 'failed') {
        take('failed --> stopping : host.shutdown');
        enterStopping();
      } else if (f.phase === 'running') {
        take('running --> stopping : host.shutdown');
        enterStopping();
      }
      break;
    case 'open.succeeds':
      take('starting_opening --> starting_catchingUp : open done');
      f.phase = 'catchingUp';
      f.published = true;
      f.server = 'pending';
      break;
    case 'open.fails':
      if (f.stopRequested) {
        take('starting_opening --> stopping : open failed [stopRequested]');
        enterStopping();
      } else {
        take('starting_opening --> failed : open failed');
        f.phase = 'failed';
      }
      break;
    case 'catchUp.succeeds':
      if (f.stopRequested) {
        take('starting_catchingUp --> stopping : catchUp done [stopRequested]');
        enterStopping();
      } else {
        take('starting_catchingUp --> running : catchUp done');
        enterRunning();
      }
      break;
    case 'catchUp.fails':
      if (f.stopRequested) {
        take('starting_catchingUp --> stopping : catchUp failed [stopRequested]');
        enterStopping();
      } else {
        take('starting_catchingUp --> failed : catchUp failed');
        f.phase = 'failed';
      }
      break;
    case 'config.changed':
      if (f.config === 'idle') {
        take('running_config_watching_idle --> running_config_watching_reconciling : config.changed');
        reconcileAgain();
      } else if (f.config === 'reconciling') {
        take('running_config_watching_reconciling --> running_config_watching_reconciling : config.changed');
        f.rereadDue = true;
      } else if (f.config === 'awaitingIdle') {
        take('running_config_watching_awaitingIdle --> running_config_watching_reconciling : config.changed');
        reconcileAgain();
      }
      break;
    case 'reconcile.clear':
    case 'reconcile.busy':
    case 'reconcile.fails': {
      const failed = event.type === 'reconcile.fails';
      if (failed) f.reconcileFailures += 1;
      const label = failed ? 'reconcile failed' : 'reconcile done';
      if (f.rereadDue) {
        take(`running_config_watching_reconciling --> running_config_watching_reconciling : ${label} [rereadDue]`);
        reconcileAgain();
      } else if (event.type === 'reconcile.busy') {
        take('running_config_watching_reconciling --> running_config_watching_awaitingIdle : reconcile done [leftBusy]');
        f.config = 'awaitingIdle';
      } else {
        take(`running_config_watching_reconciling --> running_config_watching_idle : ${label}`);
        f.config = 'idle';
      }
      break;
    }
    case 'idle.reached':
    case 'idle.fails':
      take(`running_config_watching_awaitingIdle --> running_config_watching_reconciling : awaitIdle ${event.type === 'idle.reached' ? 'done' : 'failed'}`);
      reconcileAgain();
      break;
    case 'tokens.stored':
      if (f.server === 'consenting') {
        take('running_tokens --> running_tokens : tokens.stored [consenting]');
        f.serverInbox.push('auth.completed');
      } else if (f.server === 'needs_reauth') {
        take('running_tokens --> running_tokens : tokens.stored [awaitsTokens]');
        f.serverInbox.push('server.restart');
      } else if ((f.server === 'pending' || f.server === 'refreshing') && !f.watched) {
        take('running_tokens --> running_tokens : tokens.stored [attemptUnderWay]');
        f.watched = true;
      }
      break;
    case 'server.goto': {
      f.server = event.to;
      // The attempt under way ends once the server leaves pending / authenticating without a consent.
      if (f.watched && event.to !== 'pending' && event.to !== 'refreshing') {
        f.watched = false;
        if (f.phase === 'running') {
          if (event.to === 'needs_reauth') {
            take('running_tokens --> running_tokens : attempt.ended [endedAwaitingTokens]');
            f.serverInbox.push('server.restart');
          } else take('running_tokens --> running_tokens : attempt.ended');
        } else take('any_state --> any_state : attempt.ended');
      }
      break;
    }
    case 'stopServers.done':
    case 'stopServers.fails': {
      // A failure does not skip the later steps.
      const label = event.type === 'stopServers.done' ? 'stopServers done' : 'stopServers failed';
      // The fleet is let go of: a server still watched has stopped, which ends its watch.
      if (f.watched) {
        take('any_state --> any_state : attempt.ended');
        f.watched = false;
      }
      if (f.announced) {
        take(`stopping_stoppingServers --> stopping_leavingFleet : ${label} [announced]`);
        f.phase = 'leavingFleet';
      } else {
        take(`stopping_stoppingServers --> stopping_closing : ${label}`);
        f.phase = 'closing';
      }
      break;
    }
    case 'leaveFleet.done':
    case 'leaveFleet.fails':
      take(`stopping_leavingFleet --> stopping_closing : leaveFleet ${event.type === 'leaveFleet.done' ? 'done' : 'failed'}`);
      f.phase = 'closing';
      break;
    case 'closeStores.done':
    case 'closeStores.fails':
      take(`stopping_closing --> stopped : closeStores ${event.type === 'closeStores.done' ? 'done' : 'failed'}`);
      f.phase = 'stopped';
      break;
  }
  return { next: f, edges };
}

/** The state value the machine shows for the facts. */
export function expectedValue(facts: HostFacts): unknown {
  switch (facts.phase) {
    case 'opening':
    case 'catchingUp':
      return { starting: facts.phase };
    case 'running':
      return {
        running: {
          config: facts.config === 'off' ? 'unwatched' : { watching: facts.config },
          tokens: {},
          presence: facts.listed ? 'listed' : 'unlisted',
        },
      };
    case 'stoppingServers':
    case 'leavingFleet':
    case 'closing':
      return { stopping: facts.phase };
    default:
      return facts.phase;
  }
}
