import type { FilterNode } from '../../../src/core/filter-tree/schema.js';

function regexesOf(node: FilterNode): string[] {
  if (node.kind === 'and' || node.kind === 'or') return (node.nodes as FilterNode[]).flatMap(regexesOf);
  if (node.kind === 'not') return regexesOf(node.node);
  return node.kind === 'text' && node.op === 'regex' ? [node.value] : [];
}

/**
 * The first regex of the tree that RE2 refuses, as the API would refuse it. The one-line syntax only checks where a
 * regex starts and ends; the engine is loaded (a chunk of its own) only when the filter has a regex.
 */
export async function invalidRegex(filter: FilterNode): Promise<{ value: string; message: string } | undefined> {
  const list = regexesOf(filter);
  if (list.length === 0) return undefined;
  const { RE2JS } = await import('re2js');
  for (const value of list) {
    try {
      RE2JS.compile(value);
    } catch (error) {
      return { value, message: error instanceof Error ? error.message : String(error) };
    }
  }
  return undefined;
}
