/**
 * Reads a V8 `.heapsnapshot` (the format `--heapsnapshot-signal` and `v8.writeHeapSnapshot` write,
 * Chrome DevTools' Memory panel reads) and sums it per class: objects, self size and retained size.
 * Retained sizes come from the dominator tree (Cooper, Harvey & Kennedy's iterative algorithm over
 * the graph without weak edges), as DevTools computes them, so a class's retained size is what
 * would be freed if its objects were gone. Used by bench/heap-per-stream.bench.ts to compare a
 * loaded service with the same service idle.
 */
import { readFileSync } from 'node:fs';

export interface ClassSizes {
  count: number;
  self: number;
  /** sum over the class's objects of their retained sizes, not counting an object dominated by another of the same class */
  retained: number;
}

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] }; node_count: number };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** A class's key: its constructor name for objects and closures, else `(type)` (strings, arrays, code, hidden…). */
function keyOf(type: string, name: string): string {
  if (type === 'object') return name;
  if (type === 'closure') return `${name || '(anonymous)'}()`;
  if (type === 'native') return `(native) ${name.split(' ')[0]}`;
  return `(${type})`;
}

/** A snapshot read and its dominator tree built. */
export interface HeapGraph {
  classes: Map<string, ClassSizes>;
  /**
   * The heap partitioned by owner: every object's self size counted once, under the nearest
   * object on its dominator path (itself included) whose class is a named one (not a plain
   * Object, array, string, closure, promise, context, code…). Bytes no named object dominates
   * are under `(root)`.
   */
  owners: Map<string, number>;
  /**
   * What the `limit` largest objects of a class hold (their dominator subtrees, children of at
   * least `minBytes` retained, `depth` levels), as indented lines: key, retained bytes, and the
   * start of a string's text.
   */
  /**
   * The retainer path of the first string starting with `prefix`: its dominators up to the root,
   * then the edges that reach it from its immediate dominator's side (name: what held it).
   */
  holders(prefix: string): string[];
  /** strings by their first 40 characters: total self bytes and count (which texts a load keeps, and how often) */
  strings(): Map<string, { count: number; bytes: number }>;
  explain(className: string, opts?: { limit?: number; depth?: number; minBytes?: number }): string[];
}

/** Classes that own nothing of their own: plain containers, strings, closures, promises, contexts, V8 internals. */
const GENERIC = /^(Object|Array|Map|Set|Promise|Generator|Function|system \/ .*|\(.*\)|.*\(\))$/;

export function classSizes(file: string): Map<string, ClassSizes> {
  return readHeap(file).classes;
}

export function readHeap(file: string): HeapGraph {
  const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const nf = s.snapshot.meta.node_fields;
  const ef = s.snapshot.meta.edge_fields;
  const NF = nf.length;
  const EF = ef.length;
  const [nType, nName, nSelf, nEdges] = ['type', 'name', 'self_size', 'edge_count'].map((f) => nf.indexOf(f));
  const [eType, eTo] = ['type', 'to_node'].map((f) => ef.indexOf(f));
  const nodeTypes = s.snapshot.meta.node_types[0];
  const weak = s.snapshot.meta.edge_types[0].indexOf('weak');
  const n = s.nodes.length / NF;
  const firstEdge = new Uint32Array(n + 1);
  for (let i = 0, e = 0; i < n; i++) {
    firstEdge[i] = e;
    e += s.nodes[i * NF + nEdges] * EF;
    firstEdge[i + 1] = e;
  }
  const target = (e: number) => s.edges[e + eTo] / NF;
  const strong = (e: number) => s.edges[e + eType] !== weak;

  // depth-first post order from the root (node 0), iteratively
  const order = new Int32Array(n).fill(-1); // post-order number
  const byOrder = new Uint32Array(n);
  let count = 0;
  {
    const stack = new Uint32Array(n);
    const cursor = new Uint32Array(n);
    const seen = new Uint8Array(n);
    let sp = 0;
    stack[sp++] = 0;
    seen[0] = 1;
    cursor[0] = firstEdge[0];
    while (sp > 0) {
      const v = stack[sp - 1];
      let pushed = false;
      while (cursor[v] < firstEdge[v + 1]) {
        const e = cursor[v];
        cursor[v] += EF;
        if (!strong(e)) continue;
        const w = target(e);
        if (seen[w]) continue;
        seen[w] = 1;
        cursor[w] = firstEdge[w];
        stack[sp++] = w;
        pushed = true;
        break;
      }
      if (!pushed) {
        sp--;
        order[v] = count;
        byOrder[count++] = v;
      }
    }
  }
  // predecessors (strong edges between reachable nodes), as CSR
  const predCount = new Uint32Array(n + 1);
  for (let v = 0; v < n; v++) {
    if (order[v] < 0) continue;
    for (let e = firstEdge[v]; e < firstEdge[v + 1]; e += EF) if (strong(e) && order[target(e)] >= 0) predCount[target(e) + 1]++;
  }
  for (let i = 0; i < n; i++) predCount[i + 1] += predCount[i];
  const preds = new Uint32Array(predCount[n]);
  const fill = predCount.slice(0, n);
  for (let v = 0; v < n; v++) {
    if (order[v] < 0) continue;
    for (let e = firstEdge[v]; e < firstEdge[v + 1]; e += EF) if (strong(e) && order[target(e)] >= 0) preds[fill[target(e)]++] = v;
  }
  // immediate dominators, indexed by post-order number
  const UNDEF = -1;
  const idom = new Int32Array(count).fill(UNDEF);
  const root = order[0];
  idom[root] = root;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (a < b) a = idom[a];
      while (b < a) b = idom[b];
    }
    return a;
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (let k = count - 2; k >= 0; k--) {
      const v = byOrder[k];
      let d = UNDEF;
      for (let p = predCount[v]; p < predCount[v + 1]; p++) {
        const po = order[preds[p]];
        if (idom[po] === UNDEF) continue;
        d = d === UNDEF ? po : intersect(po, d);
      }
      if (d !== UNDEF && idom[k] !== d) {
        idom[k] = d;
        changed = true;
      }
    }
  }
  // retained sizes: children before their dominator in post order
  const retained = new Float64Array(count);
  for (let k = 0; k < count; k++) retained[k] += s.nodes[byOrder[k] * NF + nSelf];
  for (let k = 0; k < count; k++) if (k !== root) retained[idom[k]] += retained[k];

  const keys: string[] = new Array(count);
  for (let k = 0; k < count; k++) {
    const v = byOrder[k];
    keys[k] = keyOf(nodeTypes[s.nodes[v * NF + nType]], s.strings[s.nodes[v * NF + nName]]);
  }
  const out = new Map<string, ClassSizes>();
  for (let k = 0; k < count; k++) {
    const key = keys[k];
    const c = out.get(key) ?? { count: 0, self: 0, retained: 0 };
    c.count++;
    c.self += s.nodes[byOrder[k] * NF + nSelf];
    // an object inside another of its class is already in that one's retained size
    let d = idom[k];
    while (d !== root && keys[d] !== key) d = idom[d];
    if (d === root) c.retained += retained[k];
    out.set(key, c);
  }
  // post order puts a dominator after everything it dominates: walk down from the root
  const owner = new Int32Array(count);
  const owners = new Map<string, number>();
  for (let k = count - 1; k >= 0; k--) {
    owner[k] = k === root ? -1 : GENERIC.test(keys[k]) ? owner[idom[k]] : k;
    const key = owner[k] < 0 ? '(root)' : keys[owner[k]];
    owners.set(key, (owners.get(key) ?? 0) + s.nodes[byOrder[k] * NF + nSelf]);
  }
  const children = new Map<number, number[]>();
  for (let k = 0; k < count; k++) if (k !== root) (children.get(idom[k]) ?? children.set(idom[k], []).get(idom[k])!).push(k);
  const label = (k: number) => {
    const v = byOrder[k];
    const type = nodeTypes[s.nodes[v * NF + nType]];
    const name = s.strings[s.nodes[v * NF + nName]];
    const text = type === 'string' || type === 'concatenated string' || type === 'sliced string' ? ` ${JSON.stringify(name.slice(0, 60))}${name.length > 60 ? `… (${name.length} chars)` : ''}` : '';
    return `${keys[k]}${text} ${(retained[k] / 1024).toFixed(1)} KB`;
  };
  const explain: HeapGraph['explain'] = (className, opts = {}) => {
    const { limit = 1, depth = 3, minBytes = 512 } = opts;
    const lines: string[] = [];
    const walk = (k: number, level: number) => {
      lines.push(`${'  '.repeat(level)}${label(k)}`);
      if (level >= depth) return;
      const kids = (children.get(k) ?? []).filter((c) => retained[c] >= minBytes).sort((a, b) => retained[b] - retained[a]);
      for (const c of kids.slice(0, 12)) walk(c, level + 1);
    };
    const of = [...Array(count).keys()].filter((k) => keys[k] === className).sort((a, b) => retained[b] - retained[a]);
    for (const k of of.slice(0, limit)) walk(k, 0);
    return lines;
  };
  const strings = () => {
    const m = new Map<string, { count: number; bytes: number }>();
    for (let k = 0; k < count; k++) {
      const v = byOrder[k];
      if (!/string/.test(nodeTypes[s.nodes[v * NF + nType]])) continue;
      const key = s.strings[s.nodes[v * NF + nName]].slice(0, 40);
      const e = m.get(key) ?? m.set(key, { count: 0, bytes: 0 }).get(key)!;
      e.count++;
      e.bytes += s.nodes[v * NF + nSelf];
    }
    return m;
  };
  const holders = (prefix: string) => {
    let k = 0;
    for (; k < count; k++) {
      const v = byOrder[k];
      if (/string/.test(nodeTypes[s.nodes[v * NF + nType]]) && s.strings[s.nodes[v * NF + nName]].startsWith(prefix)) break;
    }
    if (k === count) return [];
    const lines: string[] = [];
    for (let d = k, i = 0; d !== root && i < 30; d = idom[d], i++) {
      // the edges from the predecessors of d: which field held it
      const v = byOrder[d];
      const via: string[] = [];
      for (let p = predCount[v]; p < predCount[v + 1] && via.length < 4; p++) {
        const from = preds[p];
        for (let e = firstEdge[from]; e < firstEdge[from + 1]; e += EF)
          if (target(e) === v) {
            const nameOrIndex = s.edges[e + ef.indexOf('name_or_index')];
            const edgeType = s.snapshot.meta.edge_types[0][s.edges[e + eType]];
            via.push(`${keys[order[from]]}.${edgeType === 'element' || edgeType === 'hidden' ? `[${nameOrIndex}]` : s.strings[nameOrIndex]}`);
          }
      }
      lines.push(`${label(d)}  <- ${via.join(', ')}`);
    }
    return lines;
  };
  return { classes: out, owners, strings, explain, holders };
}
