import { AppError } from '../../../src/core/errors.js';
import { addTo, NODE_PATH, ROOT_PATH, splitReason, type NodePath } from './unsupported.js';

export { ROOT_PATH, unsupportedByPath, type NodePath } from './unsupported.js';
import { parseFilter } from '../../../src/core/filter-tree/parse.js';
import type { FieldNode, FilterNode, FilterScalar } from '../../../src/core/filter-tree/schema.js';

/*
 * The filter editor's model: the API's `filter` itself (no model of its own), edited immutably. A node is
 * named by its path as the API names it (`filter`, `filter.nodes[1]`, `filter.nodes[1].node`). Every
 * operation copies only the nodes on the way from the root to the edit: every other node keeps its identity.
 * The editor may hold empty and/or groups while the user works; `validateForApi` removes them (an empty group
 * means "no condition here") and checks the rest with the API's own `parseFilter`.
 */

/** One step down: an index into `nodes`, or `'node'` (the child of a `not`). */
export type PathStep = number | 'node';

/** The steps of a node path; undefined when `path` names no node (e.g. `filter.nodes[1].value`). */
export function parseNodePath(path: NodePath): PathStep[] | undefined {
  const m = NODE_PATH.exec(path);
  if (m === null || m[0].length !== path.length) return undefined;
  return [...m[1]!.matchAll(/\.nodes\[(\d+)\]|\.node/g)].map((s) => (s[1] === undefined ? 'node' : Number(s[1])));
}

export function formatNodePath(steps: readonly PathStep[]): NodePath {
  return ROOT_PATH + steps.map((s) => (s === 'node' ? '.node' : `.nodes[${s}]`)).join('');
}

function steps(path: NodePath): PathStep[] {
  const parsed = parseNodePath(path);
  if (parsed === undefined) throw new Error(`not a node path: ${path}`);
  return parsed;
}

function child(node: FilterNode, step: PathStep): FilterNode | undefined {
  if (step === 'node') return node.kind === 'not' ? node.node : undefined;
  return node.kind === 'and' || node.kind === 'or' ? node.nodes[step] : undefined;
}

/** The node at `path`, or undefined when there is none. */
export function getNode(tree: FilterNode, path: NodePath): FilterNode | undefined {
  const list = parseNodePath(path);
  let node: FilterNode | undefined = tree;
  for (const step of list ?? []) node = node && child(node, step);
  return list === undefined ? undefined : node;
}

/** Rebuilds the ancestors of the node at `at` with `edit` applied to it; throws when the path names no node. */
function update(node: FilterNode, at: readonly PathStep[], edit: (node: FilterNode) => FilterNode): FilterNode {
  if (at.length === 0) return edit(node);
  const [step, ...rest] = at as [PathStep, ...PathStep[]];
  const next = child(node, step);
  if (next === undefined) throw new Error(`no node at step ${String(step)}`);
  if (node.kind === 'not') return { kind: 'not', node: update(next, rest, edit) };
  if (node.kind !== 'and' && node.kind !== 'or') throw new Error('unreachable');
  const nodes = node.nodes.slice();
  nodes[step as number] = update(next, rest, edit);
  return { kind: node.kind, nodes };
}

/** `tree` with the node at `path` replaced by `node`. */
export function replaceNode(tree: FilterNode, path: NodePath, node: FilterNode): FilterNode {
  return update(tree, steps(path), () => node);
}

/**
 * `tree` without the node at `path`: taken out of its and/or group (which may become empty), or, under a
 * `not`, removed together with the `not`. Removing the root leaves `{kind: "all"}`.
 */
export function removeNode(tree: FilterNode, path: NodePath): FilterNode {
  const at = steps(path);
  if (getNode(tree, path) === undefined) throw new Error(`no node at ${path}`);
  if (at.length === 0) return { kind: 'all' };
  const last = at[at.length - 1]!;
  const parent = at.slice(0, -1);
  if (last === 'node') return removeNode(tree, formatNodePath(parent));
  return update(tree, parent, (group) =>
    group.kind === 'and' || group.kind === 'or'
      ? { kind: group.kind, nodes: group.nodes.filter((_, i) => i !== last) }
      : group,
  );
}

/** `tree` with `node` inserted into the and/or group at `groupPath`, at `index` (default: at the end). */
export function insertNode(tree: FilterNode, groupPath: NodePath, node: FilterNode, index?: number): FilterNode {
  return update(tree, steps(groupPath), (group) => {
    if (group.kind !== 'and' && group.kind !== 'or') throw new Error(`${groupPath} is not an and/or group`);
    const nodes = group.nodes.slice();
    nodes.splice(index ?? nodes.length, 0, node);
    return { kind: group.kind, nodes };
  });
}

/**
 * Adds `node` next to the node at `path`: appended when that node is an and/or group, put in its place when it
 * is `all`, otherwise both become a new `kind` group (`[existing, node]`).
 */
export function addNode(tree: FilterNode, path: NodePath, node: FilterNode, kind: 'and' | 'or' = 'and'): FilterNode {
  return update(tree, steps(path), (existing) => {
    if (existing.kind === 'and' || existing.kind === 'or')
      return { kind: existing.kind, nodes: [...existing.nodes, node] };
    return existing.kind === 'all' ? node : { kind, nodes: [existing, node] };
  });
}

/** The node at `path` wrapped in a one-child and/or group or in a `not`. */
export function wrapNode(tree: FilterNode, path: NodePath, kind: 'and' | 'or' | 'not'): FilterNode {
  return update(tree, steps(path), (node) => (kind === 'not' ? { kind, node } : { kind, nodes: [node] }));
}

/** Undoes `wrapNode`: a `not` or a one-child group at `path` is replaced by its child; anything else is kept. */
export function unwrapNode(tree: FilterNode, path: NodePath): FilterNode {
  return update(tree, steps(path), (node) => {
    if (node.kind === 'not') return node.node;
    return (node.kind === 'and' || node.kind === 'or') && node.nodes.length === 1 ? node.nodes[0]! : node;
  });
}

/** Every node path of `tree`, parents before children. */
export function nodePaths(tree: FilterNode, path: NodePath = ROOT_PATH): NodePath[] {
  if (tree.kind === 'not') return [path, ...nodePaths(tree.node, `${path}.node`)];
  if (tree.kind !== 'and' && tree.kind !== 'or') return [path];
  return [path, ...tree.nodes.flatMap((n, i) => nodePaths(n, `${path}.nodes[${i}]`))];
}

/** A field predicate with another operator, its value reshaped to fit (`exists` drops it, `in` makes a list). */
export function withFieldOp(node: FieldNode, op: FieldNode['op']): FieldNode {
  const { path } = node;
  const one: FilterScalar = node.op === 'exists' ? '' : node.op === 'in' ? (node.value[0] ?? '') : node.value;
  switch (op) {
    case 'exists':
      return { kind: 'field', path, op };
    case 'in':
      return { kind: 'field', path, op, value: node.op === 'in' ? node.value : [one] };
    case 'eq':
    case 'neq':
    case 'contains':
      return { kind: 'field', path, op, value: one };
    default:
      return { kind: 'field', path, op, value: typeof one === 'string' || typeof one === 'number' ? one : '' };
  }
}

/** Drops empty groups (and a `not` left without a child) and properties set to undefined; paths in `origin`. */
function prune(
  node: FilterNode,
  from: NodePath,
  to: NodePath,
  origin: Map<NodePath, NodePath>,
): FilterNode | undefined {
  origin.set(to, from);
  switch (node.kind) {
    case 'not': {
      const inner = prune(node.node, `${from}.node`, `${to}.node`, origin);
      return inner === undefined ? undefined : inner === node.node ? node : { kind: 'not', node: inner };
    }
    case 'and':
    case 'or': {
      const nodes: FilterNode[] = [];
      node.nodes.forEach((n, i) => {
        const kept = prune(n, `${from}.nodes[${i}]`, `${to}.nodes[${nodes.length}]`, origin);
        if (kept !== undefined) nodes.push(kept);
      });
      if (nodes.length === 0) return undefined;
      return nodes.length === node.nodes.length && nodes.every((n, i) => n === node.nodes[i])
        ? node
        : { kind: node.kind, nodes };
    }
    default: {
      const entries = Object.entries(node);
      if (entries.every(([, v]) => v !== undefined)) return node;
      return Object.fromEntries(entries.filter(([, v]) => v !== undefined)) as FilterNode;
    }
  }
}

/** What the editor sends: `tree` without empty groups (an emptied root is `{kind: "all"}`); `tree` itself when it has none. */
export function normalizeTree(tree: FilterNode): FilterNode {
  return prune(tree, ROOT_PATH, ROOT_PATH, new Map()) ?? { kind: 'all' };
}

export type ApiValidation =
  | { ok: true; filter: FilterNode }
  /** `problems`: by the editor's node path, e.g. `filter.nodes[1]` → [`value: must be a string`]. */
  | { ok: false; problems: Map<NodePath, string[]>; messages: string[] };

/**
 * Checks `tree` as `POST /cloud/logs/logs-insights` will (depth ≤ 16, ≤ 256 nodes, regexes ≤ 512 characters
 * and valid RE2, value and path limits…) by running the API's own `parseFilter` on `normalizeTree(tree)`.
 * On success `filter` is exactly what to send; on failure the problems are keyed by the editor's paths.
 */
export function validateForApi(tree: FilterNode): ApiValidation {
  const origin = new Map<NodePath, NodePath>();
  const filter = prune(tree, ROOT_PATH, ROOT_PATH, origin) ?? { kind: 'all' };
  try {
    parseFilter(filter);
    return { ok: true, filter };
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    const messages = error.details?.flatMap((d) => ('items' in d && Array.isArray(d.items) ? d.items : [])) ?? [];
    const problems = new Map<NodePath, string[]>();
    for (const item of messages.length > 0 ? messages : [error.message]) {
      const { path, text } = splitReason(item);
      const at = origin.get(path);
      addTo(problems, at ?? ROOT_PATH, at === undefined ? item : text);
    }
    return { ok: false, problems, messages };
  }
}
