/**
 * Reads a host's journal for the coverage test: every event is kept, every
 * `server.transitioned` is matched, in order per server, by the scenario that
 * caused it (`took`), with the diagram edge it says it drove. A transition
 * nobody expected fails the next `took` of that server with what the journal
 * shows; every wait is bounded and says what it waited for.
 */
import type { McpHost } from '../../src/host.js';
import type { JournalEvent } from '../../src/journal/events.js';
import { waitForEvent } from '../support/wait.js';
import { edgeName, type Row, type State } from './diagram-edges.js';

export type Transitioned = Extract<JournalEvent, { type: 'server.transitioned' }>;

export interface Claim {
  row: Row;
  server: string;
  scenario: string;
  event: Transitioned;
}

/** Long enough for a busy two-core machine; a wait that ends here is a failure, never the subject. */
export const WAIT_MS = 45_000;

export class JournalWatch {
  readonly events: JournalEvent[] = [];
  readonly claims: Claim[] = [];
  /** Evidence for internal edges, by diagram edge. */
  readonly observed = new Map<string, string[]>();
  scenario = '(none)';
  readonly #consumed = new Map<string, number>();
  readonly #listeners = new Set<() => void>();
  readonly #unsubscribe: () => void;

  constructor(
    host: McpHost,
    private readonly rows: Row[],
    private readonly closingLeavesFor: Set<State>,
  ) {
    this.#unsubscribe = host.subscribe((event) => {
      this.events.push(event);
      for (const listener of [...this.#listeners]) listener();
    });
  }

  close(): void {
    this.#unsubscribe();
  }

  /** The seq of the newest event so far: a mark to look after. */
  mark(): number {
    return this.events.at(-1)?.seq ?? 0;
  }

  transitions(server?: string): Transitioned[] {
    return this.events.filter(
      (event): event is Transitioned => event.type === 'server.transitioned' && (server === undefined || event.server === server),
    );
  }

  /** The state the journal shows for `server` now (null before its first transition). */
  stateOf(server: string): State | null {
    return this.transitions(server).at(-1)?.to ?? null;
  }

  /** Transitions no scenario accounted for. */
  unclaimed(): Transitioned[] {
    const claimed = new Set(this.claims.map((claim) => claim.event));
    return this.transitions().filter((event) => !claimed.has(event));
  }

  /** Resolves with `find()`'s first defined answer, re-checked on every journal event; rejects after `timeoutMs`. */
  until<T>(find: () => T | undefined, what: string, timeoutMs = WAIT_MS): Promise<T> {
    const subscribe = (listener: () => void) => {
      this.#listeners.add(listener);
      return () => void this.#listeners.delete(listener);
    };
    return waitForEvent(subscribe, find, `[${this.scenario}] ${what}`, timeoutMs);
  }

  /** The first event after `since` that `match` accepts. */
  after<T extends JournalEvent>(since: number, match: (event: JournalEvent) => event is T, what: string): Promise<T>;
  after(since: number, match: (event: JournalEvent) => boolean, what: string): Promise<JournalEvent>;
  after(since: number, match: (event: JournalEvent) => boolean, what: string): Promise<JournalEvent> {
    return this.until(() => this.events.find((event) => event.seq > since && match(event)), what);
  }

  /**
   * Waits for `server`'s next transition, asserts it is `from → to`, and
   * records it as taken through diagram edge `via` (a line of server.mmd).
   */
  async took(server: string, from: State | null, to: State, via: string): Promise<Transitioned> {
    const row = this.#row(via, from, to);
    const index = this.#consumed.get(server) ?? 0;
    const what = `${server}: ${edgeName(from, to)} (${via})`;
    const event = await this.until(() => this.transitions(server)[index], what);
    this.#consumed.set(server, index + 1);
    if (event.from !== from || event.to !== to) {
      const why = event.error === null ? '' : ` (${event.error_kind}: ${event.error})`;
      throw new Error(`[${this.scenario}] expected ${what}; the journal shows ${edgeName(event.from, event.to)}${why}`);
    }
    this.claims.push({ row, server, scenario: this.scenario, event });
    return event;
  }

  /** Records evidence that internal edge `via` was taken. */
  observe(via: string, evidence: string): void {
    if (!this.rows.some((row) => row.kind === 'internal' && row.edge.text === via)) {
      throw new Error(`diagrams/server.mmd has no internal edge "${via}"`);
    }
    this.observed.set(via, [...(this.observed.get(via) ?? []), `${evidence} (${this.scenario})`]);
  }

  #row(via: string, from: State | null, to: State): Row {
    const row = this.rows.find(
      (candidate) =>
        candidate.edge.text === via &&
        ((candidate.kind === 'visible' && candidate.from === from && candidate.to === to) ||
          (candidate.kind === 'retarget' &&
            candidate.to === to &&
            from !== null &&
            from !== to &&
            (candidate.from ?? from) === from &&
            this.closingLeavesFor.has(from))),
    );
    if (!row) throw new Error(`diagrams/server.mmd has no edge "${via}" that the journal shows as ${edgeName(from, to)}`);
    return row;
  }
}
