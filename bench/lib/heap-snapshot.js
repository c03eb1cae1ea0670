// Heap snapshots for the tools that look into what a ready server keeps: taken
// through one inspector session (so object ids match between two of them),
// and indexed for walking.

import { settleHeap } from './env.js';

/** A full heap snapshot through `session`, once the heap has settled. */
export async function takeSnapshot(session) {
  await settleHeap();
  const chunks = [];
  const onChunk = (message) => chunks.push(message.params.chunk);
  session.on('HeapProfiler.addHeapSnapshotChunk', onChunk);
  await session.post('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
  session.off('HeapProfiler.addHeapSnapshotChunk', onChunk);
  return JSON.parse(chunks.join(''));
}

/**
 * The ids of a snapshot's objects, to tell which objects of a later snapshot
 * (through the same session) are new: `has(id)`. Sorted ids in a typed array,
 * searched by halves: a Set here would be the biggest new object of the next
 * snapshot.
 */
export function idsOf(snapshot) {
  const width = snapshot.snapshot.meta.node_fields.length;
  const at = snapshot.snapshot.meta.node_fields.indexOf('id');
  const ids = new Float64Array(snapshot.nodes.length / width);
  for (let i = 0, k = 0; i < snapshot.nodes.length; i += width, k += 1) ids[k] = snapshot.nodes[i + at];
  ids.sort();
  return {
    has(id) {
      let lo = 0;
      let hi = ids.length - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        if (ids[mid] === id) return true;
        if (ids[mid] < id) lo = mid + 1;
        else hi = mid - 1;
      }
      return false;
    },
  };
}

/** The snapshot's nodes and edges with the offsets of their fields, and where each node's edges start. */
export function indexSnapshot(snapshot) {
  const { meta } = snapshot.snapshot;
  const nodeWidth = meta.node_fields.length;
  const edgeWidth = meta.edge_fields.length;
  const [nType, nName, nId, nSize, nEdges] = ['type', 'name', 'id', 'self_size', 'edge_count'].map((f) => meta.node_fields.indexOf(f));
  const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => meta.edge_fields.indexOf(f));
  const { nodes, edges } = snapshot;
  const total = nodes.length / nodeWidth;
  const firstEdge = new Uint32Array(total + 1);
  for (let n = 0, e = 0; n < total; n += 1) {
    firstEdge[n] = e;
    e += nodes[n * nodeWidth + nEdges] * edgeWidth;
    firstEdge[n + 1] = e;
  }
  return {
    ...snapshot,
    meta,
    nodeWidth,
    edgeWidth,
    nType,
    nName,
    nId,
    nSize,
    eType,
    eName,
    eTo,
    nodeTypes: meta.node_types[0],
    edgeTypes: meta.edge_types[0],
    total,
    firstEdge,
  };
}

/** Breadth first from the synthetic root over strong edges: each node's parent node and the edge from it (-1: unreached). */
export function shortestPaths(graph) {
  const { total, firstEdge, edges, edgeWidth, eType, eTo, nodeWidth, edgeTypes } = graph;
  const parentEdge = new Int32Array(total).fill(-1);
  const parentNode = new Int32Array(total).fill(-1);
  const seen = new Uint8Array(total);
  seen[0] = 1;
  for (let queue = [0]; queue.length > 0; ) {
    const next = [];
    for (const n of queue) {
      for (let e = firstEdge[n]; e < firstEdge[n + 1]; e += edgeWidth) {
        if (edgeTypes[edges[e + eType]] === 'weak') continue;
        const to = edges[e + eTo] / nodeWidth;
        if (seen[to]) continue;
        seen[to] = 1;
        parentEdge[to] = e;
        parentNode[to] = n;
        next.push(to);
      }
    }
    queue = next;
  }
  return { parentEdge, parentNode, seen };
}
