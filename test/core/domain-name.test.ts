import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toASCII } from 'tr46';
import {
  normalizeDomainName,
  parentCandidates,
  type DomainNameInvalidReason,
  UTS46_OPTIONS,
} from '../../src/core/domain-name.js';
import { AppError } from '../../src/core/errors.js';

function reasonOf(input: string): DomainNameInvalidReason | undefined {
  try {
    normalizeDomainName(input);
    return undefined;
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    expect(error.code).toBe('domains:name:invalid');
    return error.metadata?.reason as DomainNameInvalidReason;
  }
}

const REASONS: DomainNameInvalidReason[] = [
  'empty',
  'too-long',
  'label-too-long',
  'empty-label',
  'invalid-character',
  'invalid-hyphen',
  'public-suffix',
  'ip-address',
  'invalid-wildcard',
  'idn-invalid',
];

describe('normalizeDomainName', () => {
  it.each([
    ['Example.COM', 'example.com'],
    ['  www.example.com  ', 'www.example.com'],
    ['example.com.', 'example.com'],
    ['bücher.example', 'xn--bcher-kva.example'],
    ['BÜCHER.example', 'xn--bcher-kva.example'],
    ['xn--bcher-kva.example', 'xn--bcher-kva.example'],
    ['ｅｘａｍｐｌｅ。com', 'example.com'],
    ['foo.github.io', 'foo.github.io'],
    ['a-b.c-d.example.com', 'a-b.c-d.example.com'],
    ['123.example.com', '123.example.com'],
    ['www.ck', 'www.ck'],
    [`${'a'.repeat(63)}.com`, `${'a'.repeat(63)}.com`],
  ])('normalizes %j to %j', (input, name) => {
    const result = normalizeDomainName(input);
    expect(result).toEqual({ name, wildcard: false, labels: name.split('.') });
  });

  it('accepts a wildcard as the whole first label and keeps it in name and labels', () => {
    expect(normalizeDomainName('*.Example.com.')).toEqual({
      name: '*.example.com',
      wildcard: true,
      labels: ['*', 'example', 'com'],
    });
    expect(normalizeDomainName('*.bücher.example').name).toBe('*.xn--bcher-kva.example');
  });

  it('accepts names of exactly 253 characters and rejects 254', () => {
    const label = 'a'.repeat(63);
    const at253 = `${label}.${label}.${label}.${'b'.repeat(57)}.com`;
    expect(at253).toHaveLength(253);
    expect(normalizeDomainName(at253).name).toBe(at253);
    expect(reasonOf(`c${at253}`)).toBe('too-long');
    expect(reasonOf(`*.${at253.slice(2)}`)).toBeUndefined();
    expect(reasonOf(`*.${at253}`)).toBe('too-long');
  });

  it.each<[string, DomainNameInvalidReason]>([
    ['', 'empty'],
    ['   ', 'empty'],
    ['.', 'empty'],
    ['com', 'public-suffix'],
    ['COM.', 'public-suffix'],
    ['co.uk', 'public-suffix'],
    ['github.io', 'public-suffix'],
    ['s3.amazonaws.com', 'public-suffix'],
    ['a.ck', 'public-suffix'],
    ['localhost', 'public-suffix'],
    ['*.com', 'public-suffix'],
    ['*.co.uk', 'public-suffix'],
    ['*.github.io', 'public-suffix'],
    ['a'.repeat(2000), 'too-long'],
    [`${'a'.repeat(64)}.com`, 'label-too-long'],
    [`${'ü'.repeat(60)}.com`, 'label-too-long'],
    ['a..example.com', 'empty-label'],
    ['.example.com', 'empty-label'],
    ['example.com..', 'empty-label'],
    ['a_b.example.com', 'invalid-character'],
    ['a b.example.com', 'invalid-character'],
    ['example.com/path', 'invalid-character'],
    ['user@example.com', 'invalid-character'],
    ['example.com:443', 'invalid-character'],
    ['-a.example.com', 'invalid-hyphen'],
    ['a-.example.com', 'invalid-hyphen'],
    ['192.168.0.1', 'ip-address'],
    ['192.168.0.1.', 'ip-address'],
    ['1.2.3', 'ip-address'],
    ['example.0x1f', 'ip-address'],
    ['::1', 'ip-address'],
    ['[2001:db8::1]', 'ip-address'],
    ['*', 'invalid-wildcard'],
    ['a.*.example.com', 'invalid-wildcard'],
    ['*.*.example.com', 'invalid-wildcard'],
    ['*a.example.com', 'invalid-wildcard'],
    ['example.*', 'invalid-wildcard'],
    ['xn--zz.example', 'idn-invalid'],
    ['xn--a.example.com', 'idn-invalid'],
    ['example.com／path', 'idn-invalid'],
  ])('rejects %j with reason %s', (input, reason) => {
    expect(reasonOf(input)).toBe(reason);
  });

  it('names the reason in the message', () => {
    expect(() => normalizeDomainName('co.uk')).toThrow(/public suffix/);
    expect(() => normalizeDomainName(`${'a'.repeat(64)}.com`)).toThrow(/64 characters long; at most 63/);
  });

  it('is idempotent and yields only valid names', () => {
    const label = fc.stringMatching(/^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,20}[a-zA-Z0-9])?$/);
    const input = fc
      .tuple(
        fc.boolean(),
        fc.array(label, { minLength: 1, maxLength: 4 }),
        fc.constantFrom('com', 'co.uk', 'example', 'github.io'),
        fc.boolean(),
      )
      .map(
        ([wildcard, labels, suffix, dot]) => `${wildcard ? '*.' : ''}${labels.join('.')}.${suffix}${dot ? '.' : ''}`,
      );
    fc.assert(
      fc.property(input, (raw) => {
        const first = normalizeDomainName(raw);
        expect(normalizeDomainName(first.name)).toEqual(first);
        expect(first.labels.join('.')).toBe(first.name);
        expect(first.name).toMatch(/^(?:\*\.)?[a-z0-9.-]+$/);
      }),
    );
  });

  it('skips UTS #46 only for names it returns unchanged (plain lower-case ASCII without punycode)', () => {
    // The fast path takes [a-z0-9.-]* without `xn--` as it is: UTS #46 must agree on every such string, the
    // malformed ones (empty labels, stray hyphens, numbers) included.
    const plain = fc
      .array(fc.constantFrom(...'abcxyz0189-.'), { maxLength: 70 })
      .map((chars) => chars.join(''))
      .filter((s) => !s.includes('xn--'));
    fc.assert(
      fc.property(plain, (s) => {
        if (s !== '') expect(toASCII(s, UTS46_OPTIONS)).toBe(s);
      }),
      { numRuns: 2_000 },
    );
    for (const s of ['a..b.com', '-a.com', 'a-.com', 'ab--cd.com', '1.2.3.4', '.', 'a.b.c.d.e.f.g.h.com'])
      expect(toASCII(s, UTS46_OPTIONS)).toBe(s);
    // What the fast path leaves to UTS #46: punycode is decoded and checked.
    expect(toASCII('xn--zz.com', UTS46_OPTIONS)).toBeNull();
    expect(reasonOf('xn--zz.com')).toBe('idn-invalid');
    expect(normalizeDomainName('xn--bb-eka.at').name).toBe('xn--bb-eka.at');
  });

  it('either normalizes or throws domains:name:invalid with a known reason, for any string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), (raw) => {
        const reason = reasonOf(raw);
        if (reason !== undefined) expect(REASONS).toContain(reason);
      }),
      { numRuns: 300 },
    );
  });
});

describe('normalizeDomainName: IDN by UTS #46, the same on every Node release', () => {
  it.each([
    ['ÖBB.at', 'xn--bb-eka.at'],
    ['bücher。example', 'xn--bcher-kva.example'],
    ['a．b｡example', 'a.b.example'],
    ['faß.de', 'xn--fa-hia.de'],
    ['ΣΑΣ.example', 'xn--mxa9ab.example'],
    ['ΣΑΣ-1.example', 'xn---1-b9b5eb.example'],
    ['σας.example', 'xn--mxa8ab.example'],
    ['exa\u00admple.com', 'example.com'],
    ['क्\u200dष.example', 'xn--11b2ezcw70k.example'],
    ['نامه\u200cای.example', 'xn--mgba3gch31f060k.example'],
    ['מבחן.example', 'xn--5dbmtg.example'],
    ['xn--11b2ezcw70k.example', 'xn--11b2ezcw70k.example'],
    ['XN--BCHER-KVA.example', 'xn--bcher-kva.example'],
    ['ab--cd.example', 'ab--cd.example'],
  ])('maps %j to %j', (input, name) => {
    expect(normalizeDomainName(input).name).toBe(name);
  });

  it.each([
    ['xn--zz.example', 'punycode that decodes to a disallowed code point'],
    ['XN--ZZ.example', 'the same, in capitals'],
    ['*.xn--zz.example', 'the same, under a wildcard'],
    ['www.xn--zz.example', 'the same, not as the first label'],
    ['xn--a-ecp.ru', 'punycode of a label that is not in NFC'],
    ['xn--u-ccb.example', 'punycode of a label that starts with a combining mark'],
    ['xn--.example', 'an empty punycode label'],
    ['xn--bcher-kva-.example', 'punycode that decodes to plain ASCII'],
    ['xn--bcher-kva\u00fc.example', 'punycode with a non-ASCII character'],
    ['a\u200db.example', 'a zero width joiner outside the context ContextJ allows'],
    ['a\u200cb.example', 'a zero width non-joiner outside the context ContextJ allows'],
    ['\u0301x.example', 'a label starting with a combining mark'],
    ['١.example', 'a right-to-left label breaking the Bidi rule'],
    ['aמבחן.example', 'a label mixing left-to-right and right-to-left'],
    ['a\ufe52com', 'a small full stop (disallowed, not a dot)'],
    ['a\u2488com', 'a character whose compatibility form contains a dot'],
  ])('rejects %j (%s) as idn-invalid', (input) => {
    expect(reasonOf(input)).toBe('idn-invalid');
  });
});

describe('parentCandidates', () => {
  it.each([
    ['a.example.com', ['*.example.com']],
    ['a.b.example.com', ['*.b.example.com']],
    ['A.B.Example.COM.', ['*.b.example.com']],
    ['x.foo.github.io', ['*.foo.github.io']],
    ['example.com', []],
    ['foo.co.uk', []],
    ['foo.github.io', []],
    ['*.example.com', []],
    ['*.b.example.com', []],
  ])('lists the wildcards covering %j as %j', (name, expected) => {
    expect(parentCandidates(name)).toEqual(expected);
  });

  it('throws for an invalid name', () => {
    expect(() => parentCandidates('co.uk')).toThrow(AppError);
  });
});
