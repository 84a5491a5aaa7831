import type { JsonSelector } from './ast.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

type JsonObject = { [key: string]: JsonValue };

function isObject(value: JsonValue): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The event as a JSON object, or undefined: JSON patterns never match other events. */
export function parseJsonEvent(message: string): JsonObject | undefined {
  const start = message.search(/\S/);
  if (start < 0 || message.charAt(start) !== '{') return undefined;
  try {
    const value = JSON.parse(message) as JsonValue;
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Every node the selector reaches. Own properties only, so `$.constructor`
 * does not find Object.prototype's. A selector has at most one wildcard, so
 * the result is never larger than one node's children.
 */
export function resolveSelector(root: JsonObject, selector: JsonSelector): JsonValue[] {
  let nodes: JsonValue[] = [root];
  for (const segment of selector.segments) {
    const next: JsonValue[] = [];
    for (const node of nodes) {
      if (segment.kind === 'key') {
        if (isObject(node) && Object.hasOwn(node, segment.key)) next.push(node[segment.key] as JsonValue);
      } else if (segment.kind === 'index') {
        if (Array.isArray(node) && segment.index < node.length) next.push(node[segment.index] as JsonValue);
      } else if (Array.isArray(node)) {
        // A loop, not push(...node): spreading a huge array overflows the stack.
        for (const child of node) next.push(child);
      } else if (isObject(node)) {
        for (const key of Object.keys(node)) next.push(node[key] as JsonValue);
      }
    }
    nodes = next;
    if (nodes.length === 0) break;
  }
  return nodes;
}
