import { isIP } from 'node:net';
import { parse as parseDomain } from 'tldts';
import { toASCII } from 'tr46';
import { appError } from './errors.js';

/**
 * Domain names as Berth stores and compares them: lower-case ASCII (IDN
 * labels in punycode), no trailing dot, optionally a wildcard `*.` as the
 * whole first label.
 *
 * Public suffixes: a name must not be a public suffix of either section of
 * the Public Suffix List. The ICANN section holds the TLDs and registry
 * suffixes (`com`, `co.uk`); the private section holds suffixes under which
 * unrelated parties get names (`github.io`, `s3.amazonaws.com`). Claiming
 * `github.io` or `*.github.io` would let one tenant hold, or block everyone
 * else from, names that belong to many owners, and CAs refuse wildcards
 * directly under either kind (CA/B Baseline Requirements §3.2.2.6), so both
 * are rejected. Names under a suffix the list does not know (`foo.example`,
 * `foo.test`) are accepted by the list's default `*` rule.
 *
 * IDN labels are converted with UTS #46 (`tr46`, the implementation behind
 * whatwg-url), not the runtime's URL parser: Node's `domainToASCII` changed
 * between releases (Node 26 passes invalid punycode such as `xn--zz` through),
 * and a stored name must not depend on which Node runs the replica.
 *
 * Wildcards follow the TLS rule (RFC 6125 §6.4.3, what ACM certificates
 * match), not the DNS one: `*.example.com` covers exactly one extra label —
 * `a.example.com`, not `example.com` nor `a.b.example.com`. A DNS wildcard
 * record (RFC 4592) can answer deeper names, but a domain is only usable on
 * Berth where its certificate matches.
 */

export type DomainNameInvalidReason =
  | 'empty'
  | 'too-long'
  | 'label-too-long'
  | 'empty-label'
  | 'invalid-character'
  | 'invalid-hyphen'
  | 'public-suffix'
  | 'ip-address'
  | 'invalid-wildcard'
  | 'idn-invalid';

export interface NormalizedDomainName {
  /** The normalized name, with its `*.` when it is a wildcard. */
  name: string;
  wildcard: boolean;
  /** `name` split on dots, `*` included: `labels.join('.') === name`. */
  labels: string[];
}

const MAX_NAME_LENGTH = 253;
const MAX_LABEL_LENGTH = 63;
/** Refuse absurd input before the IDN conversion spends time on it. */
const MAX_INPUT_LENGTH = 1024;
const LABEL_CHARACTERS = /^[a-z0-9-]+$/;
/** ASCII allowed before IDN conversion; other ASCII is rejected, not mapped. */
const FORBIDDEN_ASCII = /[^\P{ASCII}a-z0-9.*-]/u;
/** Dots IDNA maps to `.` (UTS #46): a label count before conversion must count them. */
const ANY_DOT = /[.\u3002\uff0e\uff61]/u;
/**
 * Names UTS #46 returns unchanged: lower-case letters, digits, hyphens and dots, with no punycode label (`xn--`
 * must be decoded to be checked). Most names asked are such, and skip the conversion (tested equal to it).
 */
const PLAIN_NAME = /^[a-z0-9.-]*$/;
/** A last label that is a number reads as IPv4 to URL parsers and resolvers (`1.2.3`, `a.0x10`). */
const NUMERIC_LABEL = /^(?:[0-9]+|0x[0-9a-f]*)$/;

function invalid(reason: DomainNameInvalidReason, message: string): never {
  throw appError('domains:name:invalid', { message, metadata: { reason } });
}

function quote(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text);
}

/**
 * UTS #46 as browsers apply it to hosts (nontransitional: `faß.de` keeps its
 * `ß`; Bidi and ContextJ rules checked; invalid punycode rejected) plus STD3
 * rules, since a DNS name may hold only letters, digits and hyphens. Hyphen
 * placement and lengths are left to {@link checkLabels}, which names the
 * reason; `checkHyphens` would also refuse `ab--cd`, a valid DNS label.
 */
export const UTS46_OPTIONS = {
  checkHyphens: false,
  checkBidi: true,
  checkJoiners: true,
  useSTD3ASCIIRules: true,
  transitionalProcessing: false,
  verifyDNSLength: false,
  ignoreInvalidPunycode: false,
} as const;

function isIpLiteral(text: string): boolean {
  const unbracketed = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  return isIP(unbracketed) !== 0;
}

function endsInNumber(text: string): boolean {
  const labels = text.split(ANY_DOT);
  return NUMERIC_LABEL.test(labels[labels.length - 1] ?? '');
}

function checkLabels(name: string, labels: string[]): void {
  if (name.length > MAX_NAME_LENGTH) {
    invalid('too-long', `The domain name is ${name.length} characters long; at most ${MAX_NAME_LENGTH} are allowed.`);
  }
  for (const label of labels) {
    if (label === '')
      invalid(
        'empty-label',
        `The domain name ${quote(name)} has an empty label (two dots in a row, or a leading dot).`,
      );
    if (label.length > MAX_LABEL_LENGTH) {
      invalid(
        'label-too-long',
        `The label ${quote(label)} is ${label.length} characters long; at most ${MAX_LABEL_LENGTH} are allowed.`,
      );
    }
    if (!LABEL_CHARACTERS.test(label)) {
      invalid('invalid-character', `The label ${quote(label)} may contain only letters, digits and hyphens.`);
    }
    if (label.startsWith('-') || label.endsWith('-')) {
      invalid('invalid-hyphen', `The label ${quote(label)} must not start or end with a hyphen.`);
    }
  }
}

/** False when the name is itself a public suffix (ICANN or private section), so nothing under it is registrable at its level. */
function hasRegistrableDomain(name: string): boolean {
  const result = parseDomain(name, { allowPrivateDomains: true, extractHostname: false });
  return result.domain !== null && result.isIp !== true;
}

/**
 * Normalizes a user-supplied domain name, or throws `domains:name:invalid`
 * with `metadata.reason` one of {@link DomainNameInvalidReason}.
 */
export function normalizeDomainName(input: string): NormalizedDomainName {
  const trimmed = input.trim();
  if (trimmed === '') invalid('empty', 'The domain name is empty.');
  if (trimmed.length > MAX_INPUT_LENGTH) {
    invalid(
      'too-long',
      `The domain name is ${trimmed.length} characters long; at most ${MAX_NAME_LENGTH} are allowed.`,
    );
  }
  // Only ASCII is lower-cased here: the rest is UTS #46's case mapping, which
  // differs from toLowerCase (a final `Σ` maps to `σ`, not `ς`).
  let text = trimmed.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
  if (text.endsWith('.')) text = text.slice(0, -1);
  if (text === '') invalid('empty', 'The domain name is empty.');
  if (isIpLiteral(text)) invalid('ip-address', `${quote(trimmed)} is an IP address, not a domain name.`);

  const wildcard = text.startsWith('*.');
  const base = wildcard ? text.slice(2) : text;
  if (base.includes('*')) {
    invalid('invalid-wildcard', 'A wildcard must be the whole first label, as in *.example.com.');
  }
  const forbidden = FORBIDDEN_ASCII.exec(base);
  if (forbidden !== null) {
    invalid(
      'invalid-character',
      `The domain name may not contain ${quote(forbidden[0])}; only letters, digits, hyphens and dots are allowed.`,
    );
  }
  if (endsInNumber(base)) invalid('ip-address', `${quote(trimmed)} ends in a number, so it reads as an IP address.`);

  // UTS #46 maps case, full-width forms and IDN dots, and returns null for
  // invalid punycode (`xn--zz`), disallowed code points and Bidi or joiner
  // violations. The label count guards against a mapping that would add a dot.
  const ascii = PLAIN_NAME.test(base) && !base.includes('xn--') ? base : toASCII(base, UTS46_OPTIONS);
  const inputLabels = base.split(ANY_DOT).length;
  if (ascii === null || (base !== '' && (ascii === '' || ascii.split('.').length !== inputLabels))) {
    invalid('idn-invalid', `${quote(trimmed)} is not a valid internationalized domain name.`);
  }
  const baseLabels = ascii.split('.');
  const labels = wildcard ? ['*', ...baseLabels] : baseLabels;
  const name = labels.join('.');
  checkLabels(name, baseLabels);
  if (endsInNumber(ascii)) invalid('ip-address', `${quote(trimmed)} ends in a number, so it reads as an IP address.`);

  if (!hasRegistrableDomain(ascii)) {
    invalid(
      'public-suffix',
      wildcard
        ? `${quote(ascii)} is a public suffix; a wildcard over it would cover names registered by others.`
        : `${quote(ascii)} is a public suffix (like com or co.uk), not a domain someone can own.`,
    );
  }
  return { name, wildcard, labels };
}

/**
 * The wildcard names that would cover `name` under the TLS one-label rule:
 * `a.b.example.com` → `['*.b.example.com']`. Empty for a wildcard (a wildcard
 * never covers another wildcard's names) and when the parent is a public
 * suffix (`example.com` → no `*.com`, which cannot be registered).
 * A `name` given as text is normalized first, so this throws like {@link normalizeDomainName}.
 */
export function parentCandidates(name: string | NormalizedDomainName): string[] {
  const normalized = typeof name === 'string' ? normalizeDomainName(name) : name;
  if (normalized.wildcard) return [];
  const parent = normalized.labels.slice(1).join('.');
  if (!hasRegistrableDomain(parent)) return [];
  return [`*.${parent}`];
}
