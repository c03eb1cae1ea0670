import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AnyStateMachine } from 'xstate';
import { hostMachine } from './host.machine.js';
import { registryMachine } from './registry.machine.js';
import { serverMachine } from './server.machine.js';
import { sessionMachine } from './session.machine.js';
import { transactionMachine } from './transaction.machine.js';

/** The machines drawn into `diagrams/`, by file name. */
export const DIAGRAMMED_MACHINES: Record<string, AnyStateMachine> = {
  server: serverMachine,
  registry: registryMachine,
  transaction: transactionMachine,
  host: hostMachine,
  session: sessionMachine,
};

/** A state of the chart, read from the machine definition. */
interface ChartState {
  /** Unique id: the path below the root joined with `_`. */
  id: string;
  key: string;
  description: string | undefined;
  kind: 'atomic' | 'compound' | 'final';
  initial: string | null;
  children: ChartState[];
}

interface ChartEdge {
  /** `null` for a transition declared on the root: it applies in every state. */
  from: string | null;
  /** `null` for a targetless transition (actions only). */
  to: string | null;
  label: string;
}

interface Chart {
  id: string;
  initial: string | null;
  states: ChartState[];
  edges: ChartEdge[];
}

// The StateNode fields we read; typed loosely because xstate's are generic-heavy.
interface NodeLike {
  key: string;
  path: string[];
  type: string;
  description?: string;
  states: Record<string, NodeLike>;
  initial?: { target: NodeLike[] };
  transitions: Map<string, TransitionLike[]>;
  always?: TransitionLike[];
  invoke: Array<{ id: string; src: unknown }>;
  parent?: NodeLike;
}
interface TransitionLike {
  eventType: string;
  target?: NodeLike[];
  guard?: unknown;
}

const idOf = (node: NodeLike) => node.path.join('_');

function guardName(guard: unknown): string | null {
  if (!guard) return null;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'object' && guard !== null && 'type' in guard) {
    // Fixed params say which case the guard picks (`goesTo pending`); params computed from the event do not.
    const params = 'params' in guard && guard.params !== null && typeof guard.params === 'object' ? guard.params : null;
    const fixed = params ? Object.values(params).filter((value) => typeof value === 'string') : [];
    return fixed.length > 0 ? `${String(guard.type)} ${fixed.join(' ')}` : String(guard.type);
  }
  // xstate's `and([...])` / `or([...])` / `not(...)` are functions that keep their guards.
  if (typeof guard === 'function' && 'guards' in guard && Array.isArray(guard.guards)) {
    const names = guard.guards.map((inner: unknown) => guardName(inner) ?? 'guard');
    if (guard.name === 'not') return `!${names[0]}`;
    return names.join(guard.name === 'or' ? ' || ' : ' && ');
  }
  return 'guard';
}

/** Names an invoke's done/error event after its actor (`connect done`) and a delayed one after its delay (`after backoff`). */
function eventLabel(node: NodeLike, eventType: string): string {
  const delayed = /^xstate\.after\.([^.]+)\./.exec(eventType);
  if (delayed) return `after ${delayed[1]}`;
  const match = /^xstate\.(done|error)\.actor\.(.+)$/.exec(eventType);
  if (!match) return eventType;
  // A substate may take the end of work its parent invoked (it runs on while the substate changes).
  let invoked: NodeLike['invoke'][number] | undefined;
  for (let at: NodeLike | undefined = node; at !== undefined && invoked === undefined; at = at.parent) {
    invoked = at.invoke.find((invoke) => invoke.id === match[2]);
  }
  const src = typeof invoked?.src === 'string' ? invoked.src : 'actor';
  return `${src} ${match[1] === 'done' ? 'done' : 'failed'}`;
}

function readChart(machine: AnyStateMachine): Chart {
  const edges: ChartEdge[] = [];
  const readState = (node: NodeLike): ChartState => {
    const from = node.path.length === 0 ? null : idOf(node);
    const add = (transition: TransitionLike, label: string) => {
      const guard = guardName(transition.guard);
      const targets = transition.target ?? [];
      const text = guard ? `${label} [${guard}]` : label;
      if (targets.length === 0) edges.push({ from, to: null, label: text });
      for (const target of targets) edges.push({ from, to: idOf(target), label: text });
    };
    for (const [eventType, transitions] of node.transitions) {
      for (const transition of transitions) add(transition, eventLabel(node, eventType));
    }
    for (const transition of node.always ?? []) add(transition, 'always');
    const children = Object.values(node.states).map(readState);
    return {
      id: idOf(node),
      key: node.key,
      description: node.description,
      kind: node.type === 'final' ? 'final' : children.length > 0 ? 'compound' : 'atomic',
      initial: node.initial?.target[0] ? idOf(node.initial.target[0]) : null,
      children,
    };
  };
  const root = readState(machine.root as unknown as NodeLike);
  return { id: machine.id, initial: root.initial, states: root.children, edges };
}

const ANY = 'any_state';
const quote = (text: string) => text.replace(/"/g, "'");

/** Mermaid `stateDiagram-v2` text of a machine. */
export function toMermaid(machine: AnyStateMachine): string {
  const chart = readChart(machine);
  const lines = ['stateDiagram-v2', `  %% generated from the ${chart.id} machine by \`npm run diagrams\`; do not edit`];
  const writeStates = (states: ChartState[], indent: string, initial: string | null) => {
    if (initial) lines.push(`${indent}[*] --> ${initial}`);
    for (const state of states) {
      lines.push(`${indent}state "${state.key}" as ${state.id}`);
      if (state.description) lines.push(`${indent}${state.id} : ${quote(state.description)}`);
      if (state.kind === 'compound') {
        lines.push(`${indent}state ${state.id} {`);
        writeStates(state.children, `${indent}  `, state.initial);
        lines.push(`${indent}}`);
      }
      if (state.kind === 'final') lines.push(`${indent}${state.id} --> [*]`);
    }
  };
  writeStates(chart.states, '  ', chart.initial);
  if (chart.edges.some((edge) => edge.from === null)) lines.push(`  state "any state" as ${ANY}`);
  for (const edge of chart.edges) {
    const from = edge.from ?? ANY;
    lines.push(`  ${from} --> ${edge.to ?? from} : ${quote(edge.label)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** Graphviz DOT of a machine; node ids are `state_<path>` so a page can highlight the current state. */
export function toDot(machine: AnyStateMachine): string {
  const chart = readChart(machine);
  const lines = [
    `digraph ${chart.id} {`,
    '  compound=true; rankdir=LR; fontname="Helvetica"; nodesep=0.4; ranksep=0.6;',
    '  node [shape=box, style="rounded,filled", fillcolor="#f6f8fa", color="#57606a", fontname="Helvetica", fontsize=11];',
    '  edge [color="#57606a", fontname="Helvetica", fontsize=9];',
  ];
  const anchors = new Map<string, string>();
  const writeStates = (states: ChartState[], indent: string, initial: string | null, scope: string) => {
    if (initial) {
      lines.push(`${indent}"${scope}__start" [shape=point, width=0.12, fillcolor=black, label=""];`);
      lines.push(`${indent}"${scope}__start" -> "${initial}";`);
    }
    for (const state of states) {
      if (state.kind === 'compound') {
        anchors.set(state.id, `${state.id}__start`);
        lines.push(`${indent}subgraph "cluster_${state.id}" {`);
        lines.push(`${indent}  id="state_${state.id}"; label="${state.key}"; style="rounded"; color="#57606a";`);
        writeStates(state.children, `${indent}  `, state.initial, state.id);
        lines.push(`${indent}}`);
      } else {
        const shape = state.kind === 'final' ? ', peripheries=2' : '';
        const tooltip = state.description ? `, tooltip="${quote(state.description)}"` : '';
        lines.push(`${indent}"${state.id}" [id="state_${state.id}", label="${state.key}"${shape}${tooltip}];`);
      }
    }
  };
  writeStates(chart.states, '  ', chart.initial, 'root');
  if (chart.edges.some((edge) => edge.from === null)) {
    lines.push(`  "${ANY}" [label="any state", shape=note, fillcolor=white];`);
  }
  for (const edge of chart.edges) {
    const from = edge.from ?? ANY;
    const to = edge.to ?? from;
    const attrs = [`label="${quote(edge.label)}"`];
    const fromAnchor = anchors.get(from);
    const toAnchor = anchors.get(to);
    if (fromAnchor) attrs.push(`ltail="cluster_${from}"`);
    if (toAnchor) attrs.push(`lhead="cluster_${to}"`);
    lines.push(`  "${fromAnchor ?? from}" -> "${toAnchor ?? to}" [${attrs.join(', ')}];`);
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

/** Renders DOT to SVG with Graphviz compiled to WASM: the same bytes on every machine. */
export async function renderSvg(dot: string): Promise<string> {
  const { instance } = await import('@viz-js/viz');
  const viz = await instance();
  return viz.renderString(dot, { format: 'svg', engine: 'dot' });
}

/** Every file `npm run diagrams` writes, by name, generated fresh from the machines. */
export async function generateDiagrams(): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  const sections: string[] = [];
  for (const [name, machine] of Object.entries(DIAGRAMMED_MACHINES)) {
    const mermaid = toMermaid(machine);
    files[`${name}.mmd`] = mermaid;
    files[`${name}.svg`] = await renderSvg(toDot(machine));
    sections.push(`## ${name}\n\n![${name}](${name}.svg)\n\n\`\`\`mermaid\n${mermaid}\`\`\`\n`);
  }
  files['README.md'] = [
    '# State diagrams',
    '',
    'Generated from the machine definitions in `src/machines/` by `npm run diagrams`.',
    'Do not edit: a test fails when these files differ from freshly generated ones.',
    '',
    ...sections,
  ].join('\n');
  return files;
}

/** Writes the diagrams into `dir`; returns the file names written. */
export async function writeDiagrams(dir: string): Promise<string[]> {
  const files = await generateDiagrams();
  await mkdir(dir, { recursive: true });
  for (const [file, text] of Object.entries(files)) await writeFile(join(dir, file), text);
  return Object.keys(files);
}

/** Files in `dir` that differ from freshly generated ones (missing counts as different). */
export async function staleDiagrams(dir: string): Promise<string[]> {
  const files = await generateDiagrams();
  const stale: string[] = [];
  for (const [file, text] of Object.entries(files)) {
    const onDisk = await readFile(join(dir, file), 'utf8').catch(() => null);
    if (onDisk !== text) stale.push(file);
  }
  return stale;
}
