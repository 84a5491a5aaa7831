/**
 * The configuration tables, generated from `ConfigSchema` (src/config.ts), whose entries carry each variable's
 * default, bounds and `description`:
 *
 *   npx tsx scripts/config-doc.ts          writes every variable into docs/configuration.md and the most used into
 *                                          README.md, each between its markers, and prints the full table
 *   npx tsx scripts/config-doc.ts --check  writes nothing; exits 1 when either file is stale
 *
 * test/docs/config-table.test.ts fails when the committed tables differ from what this writes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { TSchema } from '@sinclair/typebox';
import { ConfigSchema } from '../src/config.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** The variables the README lists; docs/configuration.md lists them all. */
export const MOST_USED = [
  'PORT',
  'HOST',
  'DATABASE_URL',
  'BERTH_DATA_DIR',
  'LOG_LEVEL',
  'DNS_SERVERS',
  'RESERVED_ZONES',
  'CURSOR_SECRET',
  'METRICS_TOKEN',
  'REDIS_URL',
  'TRUST_PROXY',
] as const;

export interface ConfigTarget {
  /** Relative to the repository root. */
  path: string;
  begin: string;
  end: string;
  render: () => string;
}

export interface ConfigRow {
  name: string;
  default: string;
  allowed: string;
  description: string;
}

const code = (value: string | number | boolean) => `\`${String(value)}\``;

const UNITS: [number, string][] = [
  [86_400_000, 'day'],
  [3_600_000, 'h'],
  [60_000, 'min'],
  [1_000, 's'],
];

/** 10800000 → "3 h"; only whole units, else milliseconds. */
function duration(ms: number): string {
  for (const [size, unit] of UNITS) {
    if (ms >= size && ms % size === 0) {
      const n = ms / size;
      return unit === 'day' ? `${n} day${n === 1 ? '' : 's'}` : `${n} ${unit}`;
    }
  }
  return `${ms} ms`;
}

function bytes(n: number): string {
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n} bytes`;
}

/** A number as set in the environment, with its meaning in words for times and sizes. */
function number(name: string, n: number): string {
  if (n === 0) return code(n);
  if (name.endsWith('_MS')) return `${code(n)} (${duration(n)})`;
  if (name.endsWith('_BYTES')) return `${code(n)} (${bytes(n)})`;
  return code(n);
}

/** Table cells hold one line, and `|` would end the cell. */
const cell = (text: string) => text.replace(/\s+/g, ' ').replace(/\|/g, '\\|').trim();

function allowed(name: string, schema: TSchema): string {
  if (schema.type === 'integer') return `${number(name, schema.minimum)} – ${number(name, schema.maximum)}`;
  if (schema.type === 'boolean') return `${code(true)}, ${code(false)}`;
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as TSchema[]).map((s) => code(s.const)).join(', ');
  if (schema.type === 'string') {
    if (typeof schema.pattern === 'string') return `matches ${code(schema.pattern)}`;
    return schema.minLength ? 'non-empty text' : 'text';
  }
  throw new Error(`${name}: no rendering for this kind of schema`);
}

function defaultOf(name: string, schema: TSchema, required: boolean): string {
  if (!('default' in schema)) {
    if (required) throw new Error(`${name}: a required setting needs a default`);
    return 'unset';
  }
  const value: unknown = schema.default;
  if (value === '') return 'empty';
  if (typeof value === 'number') return number(name, value);
  if (typeof value === 'string' || typeof value === 'boolean') return code(value);
  throw new Error(`${name}: no rendering for default ${JSON.stringify(value)}`);
}

/** One row per variable of ConfigSchema, in the schema's order. */
export function configRows(): ConfigRow[] {
  const required = new Set<string>(ConfigSchema.required ?? []);
  return Object.entries(ConfigSchema.properties as Record<string, TSchema>).map(([name, schema]) => {
    if (typeof schema.description !== 'string' || schema.description.trim() === '') {
      throw new Error(`${name}: ConfigSchema gives it no description`);
    }
    return {
      name,
      default: defaultOf(name, schema, required.has(name)),
      allowed: allowed(name, schema),
      description: cell(schema.description),
    };
  });
}

const GENERATED =
  'Generated from `ConfigSchema` in `src/config.ts` by `npx tsx scripts/config-doc.ts`: edit the schema, not this table.';

/** Every variable: name, default, allowed values, description. */
export function renderFullTable(rows = configRows()): string {
  return [
    `<!-- ${GENERATED} -->`,
    '',
    '| variable | default | allowed | description |',
    '|---|---|---|---|',
    ...rows.map((r) => `| ${code(r.name)} | ${r.default} | ${r.allowed} | ${r.description} |`),
  ].join('\n');
}

/** The most used variables, for the README. */
export function renderSummaryTable(rows = configRows()): string {
  const byName = new Map(rows.map((r) => [r.name, r]));
  return [
    `<!-- ${GENERATED} -->`,
    '',
    '| variable | default | description |',
    '|---|---|---|',
    ...MOST_USED.map((name) => {
      const r = byName.get(name);
      if (r === undefined) throw new Error(`${name} is in MOST_USED but not in ConfigSchema`);
      return `| ${code(r.name)} | ${r.default} | ${r.description} |`;
    }),
  ].join('\n');
}

export const TARGETS: ConfigTarget[] = [
  {
    path: 'docs/configuration.md',
    begin: '<!-- config:begin -->',
    end: '<!-- config:end -->',
    render: () => renderFullTable(),
  },
  {
    path: 'README.md',
    begin: '<!-- config-summary:begin -->',
    end: '<!-- config-summary:end -->',
    render: () => renderSummaryTable(),
  },
];

/** `text` with what lies between the markers (each on a line of its own) replaced by `content`. */
export function replaceBetween(text: string, begin: string, end: string, content: string): string {
  const from = text.indexOf(begin);
  const to = text.indexOf(end);
  if (from < 0 || to < 0 || to < from || text.indexOf(begin, from + 1) >= 0) {
    throw new Error(`expected one ${begin} … ${end} pair`);
  }
  return `${text.slice(0, from + begin.length)}\n${content}\n${text.slice(to)}`;
}

/** Each target file as it is and as the generator would write it. */
export function targetFiles(root = ROOT): { path: string; current: string; expected: string }[] {
  return TARGETS.map((t) => {
    const current = readFileSync(`${root}${t.path}`, 'utf8');
    return { path: t.path, current, expected: replaceBetween(current, t.begin, t.end, t.render()) };
  });
}

function main(argv: string[]): void {
  const check = argv.includes('--check');
  const stale = [];
  for (const file of targetFiles()) {
    if (file.current === file.expected) continue;
    stale.push(file.path);
    if (!check) writeFileSync(`${ROOT}${file.path}`, file.expected);
  }
  if (check) {
    if (stale.length > 0) {
      process.stderr.write(`stale: ${stale.join(', ')}; run npx tsx scripts/config-doc.ts\n`);
      process.exit(1);
    }
    return;
  }
  process.stdout.write(`${renderFullTable()}\n`);
  process.stderr.write(stale.length > 0 ? `wrote ${stale.join(', ')}\n` : 'up to date\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href)
  main(process.argv.slice(2));
