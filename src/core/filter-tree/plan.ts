import { FALSE, TRUE, isLeaf, type FilterLeaf, type FilterNode } from './schema.js';

/** What one log backend can do with each predicate (leaf) of a filter tree. */
export interface FilterCapabilities {
  /** Named in `unsupported` reasons, e.g. "CloudWatch Logs Insights". */
  readonly backend: string;
  /**
   * True only when the backend's query evaluates `leaf` exactly as
   * `matches` does, on every row. An approximation is not pushable, whatever
   * its direction: under a `not` a superset turns into a subset.
   */
  canPush(leaf: FilterLeaf): boolean;
  /** True when the rows the backend returns carry what `matches` needs for `leaf`. */
  canApplyInProcess(leaf: FilterLeaf): boolean;
  /**
   * For a leaf the backend cannot push but Berth applies in process: a pushable filter that every row
   * matching the leaf also matches (e.g. a regex's required literals). Used where the leaf sits under
   * an even number of `not`s; TRUE when absent.
   */
  prefilter?(leaf: FilterLeaf): FilterNode;
}

export interface FilterPlan {
  /** The filter with every leaf the backend can neither push nor apply made TRUE (even `not`s) or FALSE (odd): a superset of the original. */
  effective: FilterNode;
  /** `effective` with every non-pushable leaf relaxed the same way, simplified: what the backend's query runs; a superset of `effective`. */
  pushed: FilterNode;
  /** One reason per dropped leaf, naming its path; non-empty means the rows are broader than asked. */
  unsupported: string[];
  /** True when `pushed` is equivalent to `effective`, so the backend's rows need no filtering in process. */
  exact: boolean;
}

/** How a leaf is named in an `unsupported` reason. */
export function describeLeaf(leaf: FilterLeaf): string {
  switch (leaf.kind) {
    case 'level':
      return 'a level predicate';
    case 'text':
      return leaf.op === 'regex' ? 'a regex match on the message' : `a text "${leaf.op}" match on the message`;
    case 'field':
      return `a field "${leaf.op}" predicate on ${leaf.path}`;
    case 'stream':
      return `a log stream "${leaf.op}" match`;
  }
}

/**
 * Replaces the leaves `keep` rejects by what can only widen the result where
 * they sit: FALSE under an odd number of `not`s; under an even number, TRUE or
 * a weaker filter the leaf implies (`widen`).
 */
export function relax(
  node: FilterNode,
  path: string,
  negated: boolean,
  keep: (leaf: FilterLeaf) => boolean,
  onRelax: (leaf: FilterLeaf, path: string) => void,
  widen: (leaf: FilterLeaf) => FilterNode = () => TRUE,
): FilterNode {
  if (isLeaf(node)) {
    if (keep(node)) return node;
    onRelax(node, path);
    return negated ? FALSE : widen(node);
  }
  switch (node.kind) {
    case 'all':
      return node;
    case 'not':
      return { kind: 'not', node: relax(node.node, `${path}.node`, !negated, keep, onRelax, widen) };
    case 'and':
    case 'or':
      return {
        kind: node.kind,
        nodes: node.nodes.map((child, i) => relax(child, `${path}.nodes[${i}]`, negated, keep, onRelax, widen)),
      };
  }
}

const isTrue = (node: FilterNode) => node.kind === 'all';
const isFalse = (node: FilterNode) => node.kind === 'not' && node.node.kind === 'all';

/** Folds TRUE/FALSE through and/or/not, removes double negation and one-child groups, flattens nested groups of the same kind. */
export function simplifyFilter(node: FilterNode): FilterNode {
  switch (node.kind) {
    case 'not': {
      const inner = simplifyFilter(node.node);
      if (isTrue(inner)) return FALSE;
      if (isFalse(inner)) return TRUE;
      if (inner.kind === 'not') return inner.node;
      return { kind: 'not', node: inner };
    }
    case 'and':
    case 'or': {
      const absorbing = node.kind === 'and' ? isFalse : isTrue;
      const neutral = node.kind === 'and' ? isTrue : isFalse;
      const nodes: FilterNode[] = [];
      for (const child of node.nodes.map(simplifyFilter)) {
        if (absorbing(child)) return node.kind === 'and' ? FALSE : TRUE;
        if (neutral(child)) continue;
        if (child.kind === node.kind) nodes.push(...child.nodes);
        else nodes.push(child);
      }
      if (nodes.length === 0) return node.kind === 'and' ? TRUE : FALSE;
      return nodes.length === 1 ? nodes[0]! : { kind: node.kind, nodes };
    }
    default:
      return node;
  }
}

/**
 * Splits a parsed filter between a backend's query and Berth's own process
 * (docs/design.md#2-log-query). A backend answers a query with the rows matching `pushed`;
 * keeping those that match `effective` gives exactly the rows of `effective`,
 * and those are a superset of the rows of the original filter, equal to them
 * when `unsupported` is empty.
 */
export function planFilter(filter: FilterNode, capabilities: FilterCapabilities, path = 'filter'): FilterPlan {
  const unsupported: string[] = [];
  const effective = relax(
    filter,
    path,
    false,
    (leaf) => capabilities.canPush(leaf) || capabilities.canApplyInProcess(leaf),
    (leaf, at) => unsupported.push(`${at}: ${describeLeaf(leaf)} is not supported by ${capabilities.backend}`),
  );
  let exact = true;
  const pushed = simplifyFilter(
    relax(
      effective,
      path,
      false,
      (leaf) => capabilities.canPush(leaf),
      () => {
        exact = false;
      },
      (leaf) => capabilities.prefilter?.(leaf) ?? TRUE,
    ),
  );
  return { effective, pushed, unsupported, exact };
}
