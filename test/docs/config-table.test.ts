// The configuration tables in docs/configuration.md and README.md are generated from ConfigSchema
// (scripts/config-doc.ts): every variable documented, nothing stale.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TSchema } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../src/config.js';
import { configRows, MOST_USED, TARGETS, targetFiles } from '../../scripts/config-doc.js';
import { ROOT } from '../support/process.js';

const VARIABLES = Object.keys(ConfigSchema.properties);

/** The variables named in the first column of the table between a target's markers. */
function tableVariables(path: string): string[] {
  const target = TARGETS.find((t) => t.path === path)!;
  const text = readFileSync(join(ROOT, path), 'utf8');
  const from = text.indexOf(target.begin);
  const to = text.indexOf(target.end);
  expect(from, `${path} has ${target.begin}`).toBeGreaterThanOrEqual(0);
  expect(to, `${path} has ${target.end} after ${target.begin}`).toBeGreaterThan(from);
  return [...text.slice(from, to).matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1]!);
}

describe('the configuration tables', () => {
  it('give every ConfigSchema variable a description', () => {
    const undocumented = Object.entries(ConfigSchema.properties as Record<string, TSchema>)
      .filter(([, schema]) => typeof schema.description !== 'string' || schema.description.trim() === '')
      .map(([name]) => name);
    expect(undocumented).toEqual([]);
    expect(configRows().map((r) => r.name)).toEqual(VARIABLES);
  });

  it('list every ConfigSchema variable in docs/configuration.md, in the schema order', () => {
    expect(tableVariables('docs/configuration.md')).toEqual(VARIABLES);
  });

  it('list the most used variables in README.md', () => {
    expect(tableVariables('README.md')).toEqual([...MOST_USED]);
    for (const name of MOST_USED) expect(VARIABLES).toContain(name);
  });

  it('are what scripts/config-doc.ts writes (run `npx tsx scripts/config-doc.ts` when this fails)', () => {
    for (const file of targetFiles()) expect(file.current, `${file.path} is stale`).toBe(file.expected);
  });
});
