import { describe, expect, it } from 'vitest';
import { foldClass, foldString } from '../../src/core/filter-tree/case-fold.js';
import { matches, type FilterRow } from '../../src/core/filter-tree/evaluate.js';
import { compareCodePoints } from '../../src/core/filter-tree/json-field.js';
import type { FilterNode } from '../../src/core/filter-tree/schema.js';
import { parseJsonMessage, type Level } from '../../src/core/log-level.js';

function row(message: string, level: Level = 'INFO', logStream = 'web/1'): FilterRow {
  return { message, level, logStream, json: parseJsonMessage(message) };
}

const text = (
  op: 'contains' | 'equals' | 'startsWith' | 'regex',
  value: string,
  caseSensitive?: boolean,
): FilterNode =>
  caseSensitive === undefined ? { kind: 'text', op, value } : { kind: 'text', op, value, caseSensitive };

describe('matches', () => {
  it('combines nodes with and, or, not; all is TRUE', () => {
    const r = row('disk full', 'ERROR');
    const isError: FilterNode = { kind: 'level', levels: ['ERROR'] };
    const isInfo: FilterNode = { kind: 'level', levels: ['INFO'] };
    expect(matches({ kind: 'all' }, r)).toBe(true);
    expect(matches({ kind: 'and', nodes: [isError, { kind: 'all' }] }, r)).toBe(true);
    expect(matches({ kind: 'and', nodes: [isError, isInfo] }, r)).toBe(false);
    expect(matches({ kind: 'or', nodes: [isInfo, isError] }, r)).toBe(true);
    expect(matches({ kind: 'not', node: isInfo }, r)).toBe(true);
    expect(matches({ kind: 'not', node: { kind: 'all' } }, r)).toBe(false);
  });

  describe('text', () => {
    it('is case-insensitive by default', () => {
      expect(matches(text('contains', 'DISK'), row('Disk full'))).toBe(true);
      expect(matches(text('contains', 'DISK', true), row('Disk full'))).toBe(false);
      expect(matches(text('equals', 'disk FULL'), row('Disk full'))).toBe(true);
      expect(matches(text('equals', 'disk'), row('Disk full'))).toBe(false);
      expect(matches(text('startsWith', 'disk'), row('Disk full'))).toBe(true);
      expect(matches(text('startsWith', 'full'), row('Disk full'))).toBe(false);
    });

    it('folds by simple case folding, one code point to one', () => {
      expect(matches(text('contains', 'kelvin'), row('\u212Aelvin'))).toBe(true);
      expect(matches(text('equals', 'STRASSE'), row('straße'))).toBe(false);
      expect(matches(text('equals', 'STRAẞE'), row('straße'))).toBe(true);
      expect(matches(text('equals', 'ΣΑΣ'), row('σας'))).toBe(true);
      expect(matches(text('contains', 'i'), row('ı'))).toBe(false);
      expect(matches(text('contains', '𐐨'), row('x𐐀'))).toBe(true);
    });

    it('treats an empty value as matching every message (equals: only the empty one)', () => {
      expect(matches(text('contains', ''), row('x'))).toBe(true);
      expect(matches(text('equals', ''), row('x'))).toBe(false);
      expect(matches(text('equals', ''), row(''))).toBe(true);
    });

    it('runs regexes with RE2, unanchored, (?i) unless caseSensitive', () => {
      expect(matches(text('regex', 'time(out|d out)'), row('request TIMED OUT'))).toBe(true);
      expect(matches(text('regex', 'time(out|d out)', true), row('request TIMED OUT'))).toBe(false);
      expect(matches(text('regex', '^a.b$'), row('a\nb'))).toBe(false);
      expect(matches(text('regex', 'b$'), row('ab\n'))).toBe(false);
      expect(matches(text('regex', '(a+)+$'), row(`${'a'.repeat(10_000)}b`))).toBe(false);
    });

    it('reuses a compiled regex for the same node', () => {
      const node = text('regex', 'x\\d+');
      for (let i = 0; i < 1000; i++) expect(matches(node, row(`x${i}`))).toBe(true);
    });
  });

  describe('field', () => {
    const json = row(
      '{"user": {"id": 7, "name": "Ann", "tags": ["a", 2, null, {"x": 1}]}, "ok": true, "none": null, "n": "5"}',
    );
    const field = (path: string, op: string, value?: unknown) =>
      ({ kind: 'field', path, op, ...(value === undefined ? {} : { value }) }) as FilterNode;

    it('follows object keys only', () => {
      expect(matches(field('user.id', 'exists'), json)).toBe(true);
      expect(matches(field('user.tags.x', 'exists'), json)).toBe(false);
      expect(matches(field('user.missing', 'exists'), json)).toBe(false);
      expect(matches(field('none', 'exists'), json)).toBe(true);
      expect(matches(field('constructor', 'exists'), json)).toBe(false);
      expect(matches(field('__proto__', 'exists'), json)).toBe(false);
    });

    it('compares by JSON type without coercion', () => {
      expect(matches(field('user.id', 'eq', 7), json)).toBe(true);
      expect(matches(field('user.id', 'eq', '7'), json)).toBe(false);
      expect(matches(field('n', 'eq', 5), json)).toBe(false);
      expect(matches(field('ok', 'eq', true), json)).toBe(true);
      expect(matches(field('none', 'eq', null), json)).toBe(true);
      expect(matches(field('user', 'eq', null), json)).toBe(false);
      expect(matches(field('user.name', 'eq', 'ann'), json)).toBe(false);
    });

    it('neq needs the field to exist', () => {
      expect(matches(field('user.id', 'neq', 8), json)).toBe(true);
      expect(matches(field('user.id', 'neq', 7), json)).toBe(false);
      expect(matches(field('user.missing', 'neq', 7), json)).toBe(false);
      expect(matches(field('user', 'neq', 7), json)).toBe(true);
      expect(matches(field('a', 'neq', 7), row('not json'))).toBe(false);
    });

    it('orders numbers numerically and strings by code point', () => {
      expect(matches(field('user.id', 'gt', 6.5), json)).toBe(true);
      expect(matches(field('user.id', 'lte', 7), json)).toBe(true);
      expect(matches(field('user.id', 'lt', 7), json)).toBe(false);
      expect(matches(field('n', 'gt', 4), json)).toBe(false);
      expect(matches(field('n', 'gt', '4'), json)).toBe(true);
      expect(matches(field('n', 'gte', '50'), json)).toBe(false);
      expect(matches(field('user.name', 'lt', 'B'), json)).toBe(true);
    });

    it('in is eq against any listed value', () => {
      expect(matches(field('user.id', 'in', ['7', 7]), json)).toBe(true);
      expect(matches(field('user.id', 'in', ['7', null]), json)).toBe(false);
    });

    it('contains is a substring test on strings and element equality on arrays', () => {
      expect(matches(field('user.name', 'contains', 'nn'), json)).toBe(true);
      expect(matches(field('user.name', 'contains', 'NN'), json)).toBe(false);
      expect(matches(field('user.tags', 'contains', 2), json)).toBe(true);
      expect(matches(field('user.tags', 'contains', '2'), json)).toBe(false);
      expect(matches(field('user.tags', 'contains', null), json)).toBe(true);
      expect(matches(field('user.tags', 'contains', 'x'), json)).toBe(false);
      expect(matches(field('user.id', 'contains', 7), json)).toBe(false);
    });

    it('is false on every message that is not a JSON object', () => {
      for (const message of ['[1]', 'null', '"s"', 'x=1', '']) {
        expect(matches(field('a', 'exists'), row(message))).toBe(false);
        expect(matches({ kind: 'not', node: field('a', 'exists') }, row(message))).toBe(true);
      }
    });
  });

  it('matches streams exactly or by prefix, case-sensitively', () => {
    expect(matches({ kind: 'stream', op: 'equals', value: 'web/1' }, row('', 'INFO', 'web/1'))).toBe(true);
    expect(matches({ kind: 'stream', op: 'equals', value: 'web' }, row('', 'INFO', 'web/1'))).toBe(false);
    expect(matches({ kind: 'stream', op: 'prefix', value: 'web' }, row('', 'INFO', 'web/1'))).toBe(true);
    expect(matches({ kind: 'stream', op: 'prefix', value: 'Web' }, row('', 'INFO', 'web/1'))).toBe(false);
  });
});

describe('case folding', () => {
  it('groups characters into simple case-folding classes', () => {
    const chars = (c: string) => foldClass(c.codePointAt(0)!).map((cp) => String.fromCodePoint(cp));
    expect(chars('k')).toEqual(['K', 'k', '\u212A']);
    expect(chars('s')).toEqual(['S', 's', 'ſ']);
    expect(chars('i')).toEqual(['I', 'i']);
    expect(chars('ı')).toEqual(['ı']);
    expect(chars('σ')).toEqual(['Σ', 'ς', 'σ']);
    expect(chars('ß')).toEqual(['ß', 'ẞ']);
    expect(chars('\u1FD3')).toEqual(['\u0390', '\u1FD3']);
    expect(chars('1')).toEqual(['1']);
    expect(foldString('Straße ΣΑΣ')).toBe(foldString('STRAẞE σας'));
  });

  it('agrees with JavaScript /iu on every pair of cased characters', () => {
    const cased: number[] = [];
    for (let cp = 0; cp <= 0x1ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const s = String.fromCodePoint(cp);
      if (s.toLowerCase() !== s || s.toUpperCase() !== s) cased.push(cp);
    }
    const folds = new Map(cased.map((cp) => [cp, foldString(String.fromCodePoint(cp))]));
    let mismatches = 0;
    for (const a of cased) {
      const same = new RegExp(`^\\u{${a.toString(16)}}$`, 'iu');
      for (const b of cased)
        if (b > a && same.test(String.fromCodePoint(b)) !== (folds.get(a) === folds.get(b))) mismatches++;
    }
    expect(mismatches).toBe(0);
  });
});

describe('compareCodePoints', () => {
  it('orders by code point, not UTF-16 code unit', () => {
    expect(compareCodePoints('\uFFFD', '𐐀')).toBeLessThan(0);
    expect('\uFFFD' < '𐐀').toBe(false);
    expect(compareCodePoints('a', 'ab')).toBeLessThan(0);
    expect(compareCodePoints('b', 'ab')).toBeGreaterThan(0);
    expect(compareCodePoints('𐐀', '𐐨')).toBeLessThan(0);
    expect(compareCodePoints('x', 'x')).toBe(0);
  });
});
