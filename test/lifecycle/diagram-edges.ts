/**
 * The server lifecycle's edges as the journal can see them, derived from
 * diagrams/server.mmd (generated from the machine by `npm run diagrams`), so
 * an edge added to the machine is demanded by the coverage test at once.
 *
 * The diagram draws the machine's own states: substates (`pending_connecting`),
 * the transient `boot` and `leaving`, `closing`, and `any_state` for the
 * root's transitions. The journal's `server.transitioned` events carry SPEC
 * §4 states only (`topState` of each snapshot), so each diagram edge becomes:
 * - `visible`: a change of SPEC state the journal records (`boot → X` is the
 *   first transition, `null → X`; an edge into `closing` shows the state
 *   closing leaves for, see CLOSING_DESTINATIONS);
 * - `retarget`: `closing --> closing : E`, which changes only where closing
 *   goes: visible as `<old destination> → <new>` when that changes;
 * - `internal`: a self-loop, an edge between substates of one state, or one
 *   out of `closing`/`leaving` (the view already shows the destination).
 */
import { readFileSync } from 'node:fs';
import { ServerState } from '../../src/services/journal/events.js';

export type State = ServerState;
export const SPEC_STATES: readonly State[] = ServerState.options;

export interface DiagramEdge {
  from: string;
  to: string;
  /** Event, with its guard: `connection.closed [isAuthFailure]`. */
  label: string;
  /** The event alone: `connection.closed`. */
  event: string;
  /** The line as the diagram writes it: `ready --> closing : connection.closed [isAuthFailure]`. */
  text: string;
}

export type Row =
  | { kind: 'visible'; edge: DiagramEdge; from: State | null; to: State }
  | { kind: 'retarget'; edge: DiagramEdge; to: State }
  | { kind: 'internal'; edge: DiagramEdge };

/** Top-level states of the diagram that are not SPEC §4 states, and what the journal makes of them. */
export const PSEUDO_STATES: Record<string, string> = {
  boot: 'transient initial state: its edge is the first transition, from null',
  closing: 'shows the state it leaves for (topState)',
  leaving: 'transient: picks the destination closing already showed',
  any_state: "the root's transitions: taken from every state that does not handle the event itself",
};

/**
 * Where `closing` leaves for, by the event that entered it: the machine's
 * `closeFor(next)` action on each `ready --> closing` transition, which the
 * diagram does not draw (it shows only `leaving --> X : always [goesTo X]`).
 * The journal shows the destination at the entry into closing, so the edge
 * `ready --> closing : E` is the journal edge `ready → X` for each X here.
 * Read from src/machines/server.machine.ts; every edge into closing must be
 * listed, and every destination must be one `leaving` can go to. An empty
 * list: the event leaves the destination as it was (only on `closing --> closing`).
 */
export const CLOSING_DESTINATIONS: Record<string, State[]> = {
  'connection.closed [isAuthFailure]': ['needs_reauth'],
  'connection.closed': ['error'],
  // The token ran out while the authorization server is away: error (unreachable), waiting for it.
  'connection.closed [isAuthServerAway]': ['error'],
  'server.restart': ['pending'],
  'server.disable': ['disabled'],
  'server.configure [disablesIt]': ['disabled'],
  'server.configure': ['pending'],
  'server.stop': ['stopped'],
  // An on-demand server with no call for idle_timeout_seconds goes back to waiting.
  'server.idle': ['pending'],
  // While closing, a server being stopped stays stopped: the other events re-aim it only otherwise.
  'server.restart [mayRestart]': ['pending'],
  'server.disable [isNotStopping]': ['disabled'],
  'server.enable [isNotStopping]': ['pending'],
  'server.configure [isStopping]': [],
  // The startup queue reaching a server that is still closing: it only leaves the queue; where it goes stays.
  'server.connect': [],
  'server.connect [goesTo disabled]': [],
  // A call to an on-demand server closing on its way back to pending: remembered; where it goes stays.
  'server.demand [goesTo pending]': [],
};

export interface Diagram {
  /** Every declared state id → its top-level state id. */
  topOf: Map<string, string>;
  edges: DiagramEdge[];
  /** States drawn with `--> [*]`. */
  finals: Set<string>;
}

export function readServerDiagram(): Diagram {
  return parseDiagram(readFileSync(new URL('../../diagrams/server.mmd', import.meta.url), 'utf8'));
}

export function parseDiagram(text: string): Diagram {
  const topOf = new Map<string, string>();
  const edges: DiagramEdge[] = [];
  const finals = new Set<string>();
  const open: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    let match: RegExpExecArray | null;
    if ((match = /^state (\w+) \{$/.exec(line))) open.push(match[1]!);
    else if (line === '}') open.pop();
    else if ((match = /^state "[^"]*" as (\w+)$/.exec(line))) topOf.set(match[1]!, open[0] ?? match[1]!);
    else if ((match = /^(\S+) --> (\S+)(?: : (.+))?$/.exec(line))) {
      const [, from, to, label = ''] = match as unknown as [string, string, string, string?];
      if (to === '[*]') finals.add(from);
      if (from === '[*]' || to === '[*]') continue;
      edges.push({ from, to, label, event: label.replace(/ \[.*\]$/, ''), text: line });
    }
  }
  return { topOf, edges, finals };
}

export interface Derived {
  rows: Row[];
  /** Every journal edge the diagram allows through a visible row: the edges the coverage test requires. */
  required: Array<{ from: State | null; to: State }>;
  /** Where closing can leave for, read from the `leaving` edges. */
  closingLeavesFor: Set<State>;
  /** What does not add up between the diagram and the tables above; empty when all is well. */
  problems: string[];
}

export const edgeName = (from: State | null, to: State): string => `${from ?? '∅'} → ${to}`;

export function deriveRows(diagram: Diagram): Derived {
  const problems: string[] = [];
  const rows: Row[] = [];
  const isSpec = (state: string): state is State => (SPEC_STATES as readonly string[]).includes(state);
  const top = (id: string): string => {
    const found = diagram.topOf.get(id);
    if (found === undefined) problems.push(`state "${id}" is used by an edge but never declared`);
    return found ?? id;
  };
  for (const state of new Set(diagram.topOf.values())) {
    if (!isSpec(state) && !(state in PSEUDO_STATES)) {
      problems.push(`top-level state "${state}" is neither a SPEC §4 state nor a known pseudo state`);
    }
  }

  // `leaving --> X : always [goesTo X]`, and its unguarded fallback.
  const closingLeavesFor = new Set<State>();
  for (const edge of diagram.edges) {
    if (top(edge.from) !== 'leaving') continue;
    const to = top(edge.to);
    if (isSpec(to)) closingLeavesFor.add(to);
    else problems.push(`"${edge.text}": leaving goes to "${to}", not a SPEC state`);
  }
  const destinations = (edge: DiagramEdge): State[] => {
    const listed = CLOSING_DESTINATIONS[edge.label];
    if (listed === undefined) {
      problems.push(`"${edge.text}": an edge into closing that CLOSING_DESTINATIONS does not cover`);
      return [];
    }
    for (const state of listed) {
      if (!closingLeavesFor.has(state)) problems.push(`"${edge.text}": CLOSING_DESTINATIONS says ${state}, where leaving never goes`);
    }
    return listed;
  };

  // A state that handles an event itself (unguarded) is not left by the root's transition for it.
  const handlesItself = (state: string, event: string) =>
    diagram.edges.some((edge) => edge.from === state && edge.label === event);
  const anySources = [...new Set(diagram.topOf.values())].filter(
    (state): state is State => isSpec(state) && !diagram.finals.has(state),
  );

  for (const edge of diagram.edges) {
    const from = top(edge.from);
    const to = top(edge.to);
    if (from === 'boot') {
      if (isSpec(to)) rows.push({ kind: 'visible', edge, from: null, to });
      else problems.push(`"${edge.text}": boot leads to "${to}"`);
    } else if (from === 'any_state') {
      if (to === 'any_state') rows.push({ kind: 'internal', edge });
      else if (!isSpec(to)) problems.push(`"${edge.text}": the root leads to "${to}"`);
      else {
        for (const source of anySources) {
          if (source !== to && !handlesItself(source, edge.label)) rows.push({ kind: 'visible', edge, from: source, to });
        }
      }
    } else if (to === 'closing') {
      const listed = destinations(edge);
      if (listed.length === 0 && from === 'closing') rows.push({ kind: 'internal', edge });
      else if (listed.length === 0 && edge.label in CLOSING_DESTINATIONS) {
        problems.push(`"${edge.text}": enters closing without saying where it goes`);
      }
      for (const destination of listed) {
        if (from === 'closing') rows.push({ kind: 'retarget', edge, to: destination });
        else if (isSpec(from)) rows.push({ kind: 'visible', edge, from, to: destination });
        else problems.push(`"${edge.text}": closing entered from "${from}"`);
      }
    } else if (from === 'closing' || from === 'leaving' || from === to) {
      rows.push({ kind: 'internal', edge });
    } else if (isSpec(from) && isSpec(to)) {
      rows.push({ kind: 'visible', edge, from, to });
    } else {
      problems.push(`"${edge.text}": no rule maps ${from} → ${to}`);
    }
  }

  // The table must not outlive the machine: every label it lists enters closing somewhere.
  for (const label of Object.keys(CLOSING_DESTINATIONS)) {
    if (!diagram.edges.some((edge) => top(edge.to) === 'closing' && edge.label === label)) {
      problems.push(`CLOSING_DESTINATIONS lists "${label}", but no edge into closing has that label`);
    }
  }
  for (const state of closingLeavesFor) {
    if (!Object.values(CLOSING_DESTINATIONS).some((listed) => listed.includes(state))) {
      problems.push(`leaving can go to ${state}, but no event into closing leads there`);
    }
  }

  const required = new Map<string, { from: State | null; to: State }>();
  for (const row of rows) if (row.kind === 'visible') required.set(edgeName(row.from, row.to), { from: row.from, to: row.to });
  return { rows, required: [...required.values()], closingLeavesFor, problems };
}
