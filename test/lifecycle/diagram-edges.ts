/**
 * The server lifecycle's edges as the journal can see them, derived from
 * diagrams/server.mmd (generated from the machine by `npm run diagrams`), so
 * an edge added to the machine is demanded by the coverage test at once.
 *
 * The diagram draws the machine's own states: substates (`pending_connecting`),
 * the transient `boot`, `closing` with one substate per destination
 * (`closing_to_pending`), and `any_state` for the root's transitions. The
 * journal's `server.transitioned` events carry SPEC §4 states only (`topState`
 * of each snapshot; a closing server shows where it goes), so each diagram
 * edge becomes:
 * - `visible`: a change of SPEC state the journal records (`boot → X` is the
 *   first transition, `null → X`; an edge into `closing_to_X` shows X, the
 *   state that substate's own `closeConnection done` edge leads to);
 * - `retarget`: an edge between substates of closing, which changes only
 *   where closing goes: visible as `<old destination> → <new>`;
 * - `internal`: a self-loop, an edge between substates of one state, or one
 *   out of closing (the view already shows the destination).
 */
import { readFileSync } from 'node:fs';
import { ServerState } from '../../src/journal/events.js';

export type State = ServerState;
export const SPEC_STATES: readonly State[] = ServerState.options;

export interface DiagramEdge {
  from: string;
  to: string;
  /** Event, with its guard: `connection.closed [needsAPerson]`. */
  label: string;
  /** The event alone: `connection.closed`. */
  event: string;
  /** The line as the diagram writes it: `ready --> closing : connection.closed [needsAPerson]`. */
  text: string;
}

export type Row =
  | { kind: 'visible'; edge: DiagramEdge; from: State | null; to: State }
  /** `from`: the destination it had, when the edge leaves one substate of closing (not closing itself, any of them). */
  | { kind: 'retarget'; edge: DiagramEdge; from?: State; to: State }
  | { kind: 'internal'; edge: DiagramEdge };

/** Top-level states of the diagram that are not SPEC §4 states, and what the journal makes of them. */
export const PSEUDO_STATES: Record<string, string> = {
  boot: 'transient initial state: its edge is the first transition, from null',
  closing: 'shows the state its substate leaves for (topState)',
  any_state: "the root's transitions: taken from every state that does not handle the event itself",
};

/** The event by which a substate of closing leaves once its connection is closed. */
const CLOSED = 'closeConnection done';

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
  /** Where closing can leave for, read from the `closeConnection done` edges of its substates. */
  closingLeavesFor: Set<State>;
  /** Each substate of closing → the SPEC state it leaves for (and the journal shows meanwhile). */
  closingShows: Map<string, State>;
  /** What does not add up between the diagram and the machine's rules; empty when all is well. */
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

  // Each substate of closing leaves, once closed, for the state it is named after.
  const closingShows = new Map<string, State>();
  const closingSubstates = [...diagram.topOf].filter(([id, top]) => top === 'closing' && id !== 'closing').map(([id]) => id);
  for (const id of closingSubstates) {
    const onward = diagram.edges.filter((edge) => edge.from === id && edge.label === CLOSED);
    const to = onward.length === 1 ? top(onward[0]!.to) : undefined;
    if (to !== undefined && isSpec(to)) closingShows.set(id, to);
    else problems.push(`closing substate "${id}" has ${onward.length} "${CLOSED}" edge(s), not one into a SPEC state`);
  }
  const closingLeavesFor = new Set(closingShows.values());
  const destination = (edge: DiagramEdge): State | undefined => {
    const shown = closingShows.get(edge.to);
    if (shown === undefined) problems.push(`"${edge.text}": enters closing without naming where it goes`);
    return shown;
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
    } else if (to === 'closing' && (edge.to === 'closing' || edge.from === edge.to)) {
      // Closing acts (leaves the startup queue, marks a demand, takes a config) and goes where it went.
      rows.push({ kind: 'internal', edge });
    } else if (to === 'closing') {
      const shown = destination(edge);
      if (shown === undefined) continue;
      if (from === 'closing') {
        const had = closingShows.get(edge.from);
        rows.push(had === undefined ? { kind: 'retarget', edge, to: shown } : { kind: 'retarget', edge, from: had, to: shown });
      } else if (isSpec(from)) rows.push({ kind: 'visible', edge, from, to: shown });
      else problems.push(`"${edge.text}": closing entered from "${from}"`);
    } else if (from === 'closing' || from === to) {
      rows.push({ kind: 'internal', edge });
    } else if (isSpec(from) && isSpec(to)) {
      rows.push({ kind: 'visible', edge, from, to });
    } else {
      problems.push(`"${edge.text}": no rule maps ${from} → ${to}`);
    }
  }

  for (const [id, state] of closingShows) {
    if (!rows.some((row) => row.kind === 'visible' && row.edge.to === id)) {
      problems.push(`closing substate "${id}" (for ${state}) is never entered from outside closing`);
    }
  }

  const required = new Map<string, { from: State | null; to: State }>();
  for (const row of rows) if (row.kind === 'visible') required.set(edgeName(row.from, row.to), { from: row.from, to: row.to });
  return { rows, required: [...required.values()], closingLeavesFor, closingShows, problems };
}
