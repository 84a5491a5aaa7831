/**
 * Node paths as the API writes them (`filter.nodes[1].node`), and the API's `unsupported` reasons keyed by them.
 * Apart from filter-tree.ts so the page's first load does not carry the API's filter parser (and its regex engine).
 */

export type NodePath = string;

export const ROOT_PATH: NodePath = 'filter';
export const NODE_PATH = /^filter((?:\.nodes\[\d+\]|\.node(?![\w$-]))*)/;

export function splitReason(reason: string): { path: NodePath; text: string } {
  const m = NODE_PATH.exec(reason);
  const rest = m === null ? '' : reason.slice(m[0].length);
  if (m === null || !/^(\.[\w$-]+|\[[^\]]*\])*: /.test(rest)) return { path: ROOT_PATH, text: reason };
  return { path: m[0], text: rest.startsWith(': ') ? rest.slice(2) : rest.slice(1) };
}

export function addTo(map: Map<NodePath, string[]>, path: NodePath, text: string): void {
  map.set(path, [...(map.get(path) ?? []), text]);
}

/**
 * The API's `unsupported` reasons (`filter.nodes[1].node: a regex match … is not supported by …`) by the
 * path of the node they concern, each without its path; a reason naming no node is kept whole under `filter`.
 */
export function unsupportedByPath(reasons: readonly string[]): Map<NodePath, string[]> {
  const map = new Map<NodePath, string[]>();
  for (const reason of reasons) {
    const { path, text } = splitReason(reason);
    addTo(map, path, text);
  }
  return map;
}
