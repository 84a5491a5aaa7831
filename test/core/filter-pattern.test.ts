import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/core/errors.js';
import { compileFilterPattern, parseFilterPattern } from '../../src/core/filter-pattern/index.js';

/*
 * Cases come from AWS's "Filter pattern syntax for metric filters, subscription
 * filters, filter log events, and Live Tail"
 * (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/FilterAndPatternSyntax.html);
 * each block names its section. "Archived guide" means the older "Filter and
 * Pattern Syntax" page (awsdocs/amazon-cloudwatch-logs-user-guide,
 * doc_source/FilterAndPatternSyntax.md).
 */

type Case = [pattern: string, message: string, matches: boolean];

function runCases(cases: Case[]): void {
  it.each(cases)('%s against %j is %s', (pattern, message, matches) => {
    expect(compileFilterPattern(pattern)(message)).toBe(matches);
  });
}

describe('regex patterns', () => {
  // § Supported regular expressions (regex) syntax — Usage of supported operators
  runCases([
    ['%^[hc]at%', 'hat trick', true],
    ['%^[hc]at%', 'that', false],
    ['%[hc]at$%', 'a cat', true],
    ['%[hc]at$%', 'cats', false],
    ['%colou?r%', 'color', true],
    ['%colou?r%', 'colour', true],
    ['%[abc]%', 'xbz', true],
    ['%[abc]%', 'xyz', false],
    ['%[a-z]%', '123q', true],
    ['%[abcx-z]%', 'y', true],
    ['%a{3,5}%', 'aaa', true],
    ['%a{3,5}%', 'aa', false],
    ['%a{3,}%', 'aaaa', true],
    ['%xa{,2}b%', 'xb', true],
    ['%gra|ey%', 'gray', true],
    ['%gra|ey%', 'grey', true],
    ['%^starting|^initializing|^shutting down%', 'shutting down now', true],
    ['%^starting|^initializing|^shutting down%', 'skipping initializing x', false],
    ['%abcc|ab[^c]$%', 'abcc x', true],
    ['%abcc|ab[^c]$%', 'aba', true],
    ['%abcc|ab[^c]$%', 'aac x', false],
    ['%\\[.\\]%', '[7]', true],
    ['%\\[.\\]%', '[]]', true],
    ['%\\[.\\]%', '[]', false],
    ['%10\\.10\\.0\\.1%', '10.10.0.1', true],
    ['%10\\.10\\.0\\.1%', '10010,051', false],
    ['%10.10.0.1%', '10010,051', true],
    ['%ab*c%', 'ac', true],
    ['%ab*c%', 'abbbc', true],
    ['%ab[0-9]*%', 'ab129', true],
    ['%ab+c%', 'ac', false],
    ['%ab+c%', 'abbc', true],
    ['%.at%', ' at', true],
    ['%\\d%', 'a1', true],
    ['%\\d%', 'ab', false],
    ['%\\D%', '12', false],
    ['%\\s%', 'a\tb', true],
    ['%\\S%', '   ', false],
    ['%\\w%', '#_', true],
    ['%\\W%', 'a_1', false],
    ['%\\x3A%', 'a:b', true],
    ['%\\x28%', 'f(x)', true],
    // "`.`: Matches any single character" — a newline too.
    ['%a.b%', 'a\nb', true],
  ]);

  // § Using filter patterns to match terms with a regular expression (regex)
  runCases([
    ['%AUTHORIZED%', '[ERROR 401] UNAUTHORIZED REQUEST', true],
    ['%AUTHORIZED%', '[SUCCESS 200] AUTHORIZED REQUEST', true],
    ['%AUTHORIZED%', '[SUCCESS 200] authorized', false],
  ]);

  it('keeps POSIX classes and other RE2-only syntax out of character classes', () => {
    expect(compileFilterPattern('%[[:digit:]%')('5')).toBe(false);
    expect(compileFilterPattern('%[[:digit:]%')(':')).toBe(true);
  });
});

describe('unstructured patterns', () => {
  const requests = [
    '[ERROR 400] BAD REQUEST',
    '[ERROR 401] UNAUTHORIZED REQUEST',
    '[ERROR 419] MISSING ARGUMENTS',
    '[ERROR 420] INVALID ARGUMENTS',
  ];
  // § Using filter patterns to match terms in unstructured log events
  runCases([
    ...requests.map((message): Case => ['ERROR', message, true]),
    ['ERROR ARGUMENTS', requests[2] as string, true],
    ['ERROR ARGUMENTS', requests[3] as string, true],
    ['ERROR ARGUMENTS', requests[0] as string, false],
    ['ERROR ARGUMENTS', requests[1] as string, false],
    ...requests.map((message): Case => ['?ERROR ?ARGUMENTS', message, true]),
    ['?ERROR ?ARGUMENTS', '[INFO] REQUEST FAILED', false],
    // "If you combine ? with other filter patterns, all question mark terms will be ignored."
    ['?ERROR ?ARGUMENTS REQUEST', '[INFO] REQUEST FAILED', true],
    ['?ERROR ?ARGUMENTS REQUEST', '[WARN] UNAUTHORIZED REQUEST', true],
    ['?ERROR ?ARGUMENTS REQUEST', '[ERROR] 400 BAD REQUEST', true],
    ['?ERROR ?ARGUMENTS REQUEST', '[ERROR 419] MISSING ARGUMENTS', false],
    ['"INTERNAL SERVER ERROR"', '[ERROR 500] INTERNAL SERVER ERROR', true],
    ['"INTERNAL SERVER ERROR"', '[ERROR 500] INTERNAL ERROR SERVER', false],
    ['ERROR -ARGUMENTS', requests[0] as string, true],
    ['ERROR -ARGUMENTS', requests[1] as string, true],
    ['ERROR -ARGUMENTS', requests[2] as string, false],
    ['ERROR -ARGUMENTS', requests[3] as string, false],
    ['" "', 'anything at all', true],
    ['" "', '', true],
  ]);

  // Archived guide § Matching Terms in Log Events and § OR Pattern Matching
  runCases([
    ['ERROR', 'Exiting with ERRORCODE: -1', true],
    ['"ERROR" -"Exiting"', 'Exiting with ERRORCODE: -1', false],
    ['"ERROR" -"Exiting"', '[ERROR] A fatal exception has occurred', true],
    ['ERROR Exception', '[ERROR] Caught IllegalArgumentException', true],
    ['Failed to process the request', '[WARN] Failed to process the request', true],
    ['?ERROR ?WARN', 'ERROR WARN message', true],
    ['?ERROR ?WARN', 'WARN message', true],
    ['?ERROR ?WARN', 'INFO message', false],
    ['ERROR WARN', 'ERROR WARN message', true],
    ['ERROR WARN', 'ERROR message', false],
    ['ERROR -WARN', 'ERROR message', true],
    ['ERROR -WARN', 'ERROR WARN message', false],
  ]);

  runCases([
    ['error', 'ERROR', false],
    ['"a \\"quoted\\" word"', 'a "quoted" word', true],
    ['"user@example.com"', 'login user@example.com ok', true],
    ['-DEBUG', 'INFO ready', true],
    ['-DEBUG', 'DEBUG ready', false],
  ]);

  it('matches every event when the pattern is empty or blank', () => {
    expect(compileFilterPattern('')('anything')).toBe(true);
    expect(compileFilterPattern('  \t ')('')).toBe(true);
    expect(parseFilterPattern('   ')).toEqual({ kind: 'all' });
  });
});

describe('JSON patterns', () => {
  // § Using filter patterns to match terms in JSON log events — JSON log event
  const event = JSON.stringify({
    eventType: 'UpdateTrail',
    sourceIPAddress: '111.111.111.111',
    arrayKey: ['value', 'another value'],
    objectList: [
      { name: 'a', id: 1 },
      { name: 'b', id: 2 },
    ],
    SomeObject: null,
    'cluster.name': 'c',
    ThisFlag: true,
  });
  runCases([
    ['{ $.eventType = "UpdateTrail" }', event, true],
    ['{ $.sourceIPAddress != 123.123.* }', event, true],
    ['{ $.sourceIPAddress != 111.111.* }', event, false],
    ['{ $.arrayKey[0] = "value" }', event, true],
    ['{ $.eventType = %Trail% }', event, true],
    ['{ $.arrayKey[*] = %val.{2}% }', event, true],
    ['{ $.* = %111\\.111\\.111\\.1[0-9]{1,2}% }', event, true],
    ['{ $.[\'cluster.name\'] = "c" }', event, true],
    ['{ $.SomeObject IS NULL }', event, true],
    ['{ $.SomeOtherObject NOT EXISTS }', event, true],
    ['{ $.SomeObject NOT EXISTS }', event, false],
    ['{ $.eventType IS NULL }', event, false],
    // Archived guide § JSON Metric Filter Examples
    ['{ $.objectList[1].id = 2 }', event, true],
    ['{ $.objectList[1].id = 1 }', event, false],
    ['{ $.ThisFlag IS TRUE }', event, true],
    ['{ $.ThisFlag IS FALSE }', event, false],
    // "If a property selector points to an array or object, the filter pattern won't match."
    ['{ $.arrayKey = "value" }', event, false],
    ['{ $.arrayKey != "value" }', event, false],
    ['{ $.eventType = "UpdateTrail" }', 'UpdateTrail as plain text', false],
  ]);

  // Archived guide § STRING: `*Event`, `Event*`, and `Ev*ent` only matches itself.
  runCases([
    ['{ $.name = *Event }', '{"name":"PutEvent"}', true],
    ['{ $.name = Event* }', '{"name":"EventId"}', true],
    ['{ $.name = Ev*ent }', '{"name":"Event"}', false],
    ['{ $.name = Ev*ent }', '{"name":"Ev*ent"}', true],
    ['{ $.latency = * }', '{"latency":12}', true],
    ['{ $.latency = * }', '{"other":12}', false],
  ]);

  // § Writing filter patterns that match numeric values, and the archived guide's § Numeric Comparisons
  runCases([
    ['{ $.bandwidth > 75 }', '{"bandwidth":76}', true],
    ['{ $.bandwidth > 75 }', '{"bandwidth":75}', false],
    ['{ $.latency < 50 }', '{"latency":49.9}', true],
    ['{ $.refreshRate >= 60 }', '{"refreshRate":60}', true],
    ['{ $.responseTime <= 5 }', '{"responseTime":6}', false],
    ['{ $.errorCode = 400}', '{"errorCode":400}', true],
    ['{ $.errorCode != 500 }', '{"errorCode":500}', false],
    ['{ $.number[0] = 1e+3 }', '{"number":[1000]}', true],
    ['{ $.number[0] != 1e-3 }', '{"number":[0.001]}', false],
    ['{ $.latency > +1000 }', '{"latency":1001}', true],
    ['{ $.numbers[0] < 10e3 }', '{"numbers":[9999]}', true],
    ['{ $.processes[4].averageRuntime <= 55.5 }', '{"processes":[0,0,0,0,{"averageRuntime":55.5}]}', true],
  ]);

  // Berth's choices where the guide is silent (docs/filter-patterns.md).
  runCases([
    ['{ $.code = 400 }', '{"code":"400"}', true],
    ['{ $.code = 400 }', '{"code":400.0}', true],
    ['{ $.code > 5 }', '{"code":"x"}', false],
    ['{ $.code != 5 }', '{"code":"x"}', true],
    ['{ $.code != 5 }', '{"other":1}', false],
    ['{ $.a NOT EXISTS }', 'not json at all', false],
    ['{ $.a NOT EXISTS }', '[1, 2]', false],
  ]);

  // § Using filter patterns to match terms in JSON log events — compound expressions
  const compound = JSON.stringify({
    user: { id: 1, email: 'John.Stiles@example.com' },
    users: [
      { id: 2, email: 'John.Doe@example.com' },
      { id: 3, email: 'Jane.Doe@example.com' },
    ],
    actions: ['GET', 'PUT', 'DELETE'],
    coordinates: [
      [0, 1, 2],
      [4, 5, 6],
      [7, 8, 9],
    ],
  });
  runCases([
    ['{ ($.user.id = 1) && ($.users[0].email = "John.Doe@example.com") }', compound, true],
    [
      '{ $.user.email = "John.Stiles@example.com" || $.coordinates[0][1] = "nonmatch" && $.actions[2] = "nonmatch" }',
      compound,
      true,
    ],
    [
      '{ ($.user.email = "John.Stiles@example.com" || $.coordinates[0][1] = "nonmatch") && $.actions[2] = "nonmatch" }',
      compound,
      false,
    ],
    ['{ ($.user.id = 2 && $.users[0].email = "nonmatch") || $.actions[2] = "GET" }', compound, false],
    ['{ $.coordinates[2][0] = 7 }', compound, true],
  ]);

  // Archived guide § OR Pattern Matching
  runCases([
    ['{$.foo = bar}', '{"foo": "bar"}', true],
    ['{$.foo = baz }', '{"foo": "bar"}', false],
    ['{$.foo = bar || $.foo = baz }', '{"foo": "baz"}', true],
  ]);

  it('never reads properties an event inherits from Object.prototype', () => {
    expect(compileFilterPattern('{ $.constructor NOT EXISTS }')('{"a":1}')).toBe(true);
    expect(compileFilterPattern('{ $.toString = * }')('{"a":1}')).toBe(false);
  });
});

describe('space-delimited patterns', () => {
  // § Using filter patterns to match terms in space-delimited log events
  const access = '127.0.0.1 Prod frank [10/Oct/2000:13:25:15 -0700] "GET /index.html HTTP/1.0" 404 1534';
  runCases([
    ['[ip=%127\\.0\\.0\\.[1-9]%, user, username, timestamp, request =*.html*, status_code = 4*, bytes]', access, true],
    [
      '[ip=%127\\.0\\.0\\.[1-9]%, user, username, timestamp, request =*.html*, status_code = 4*, bytes]',
      access.replace('127.0.0.1', '127.0.0.0'),
      false,
    ],
    ['[..., request =*.html*, status_code = 4*, bytes]', access, true],
    ['[..., request =*.html*, status_code = 4*, bytes]', access.replace(' 404 ', ' 500 '), false],
    ['[ip, user, username, timestamp, request =*.html*, status_code = 404 || status_code = 410, bytes]', access, true],
    [
      '[ip, user, username, timestamp, request =*.html*, status_code = 404 || status_code = 410, bytes]',
      access.replace(' 404 ', ' 410 '),
      true,
    ],
    [
      '[ip, user, username, timestamp, request =*.html*, status_code = 404 || status_code = 410, bytes]',
      access.replace(' 404 ', ' 200 '),
      false,
    ],
    ['[ip, user, username, timestamp = "10/Oct/2000:13:25:15 -0700", request, status_code, bytes]', access, true],
  ]);

  const lines = [
    'INFO 09/25/2014 12:00:00 GET /service/resource/67 1200',
    'INFO 09/25/2014 12:00:01 POST /service/resource/67/part/111 1310',
    'WARNING 09/25/2014 12:00:02 Invalid user request',
    'ERROR 09/25/2014 12:00:02 Failed to process request',
  ];
  const expectLines = (pattern: string, expected: boolean[]): Case[] =>
    lines.map((line, i): Case => [pattern, line, expected[i] as boolean]);
  runCases([
    ...expectLines('[w1=ERROR, w2]', [false, false, false, true]),
    ...expectLines('[w1=ERROR || w1=WARNING, w2]', [false, false, true, true]),
    ...expectLines('[w1!=ERROR && w1!=WARNING, w2]', [true, true, false, false]),
    ...expectLines('[logLevel, date, time, method, url=%/service/resource/[0-9]+$%, response_time]', [
      true,
      false,
      false,
      false,
    ]),
    ...expectLines('[logLevel, date, time, method, url=%/service/resource/[0-9]+/part/[0-9]+$%, response_time]', [
      false,
      true,
      false,
      false,
    ]),
  ]);

  // Archived guide § Using Metric Filters to Extract Values from Space-Delimited Log Events
  const apache = '127.0.0.1 - frank [10/Oct/2000:13:35:22 -0700] "GET /apache_pb.gif HTTP/1.0" 500 5324';
  runCases([
    ['[ip, user, username, timestamp, request, status_code, bytes]', apache, true],
    ['[..., status_code, bytes]', apache, true],
    ['[ip, user, ..., status_code, bytes]', apache, true],
    ['[ip, user, ...]', apache, true],
    ['[ip, user, username, timestamp, request, status_code, bytes > 1000]', apache, true],
    ['[ip, user, username, timestamp, request, status_code, bytes > 10000]', apache, false],
    ['[ip, user, username, timestamp, request, status_code = 200, bytes]', apache, false],
    ['[ip, user, username, timestamp, request, status_code = 5*, bytes]', apache, true],
    ['[ip, user, username, timestamp, request = *gif*, status_code = 5*, bytes]', apache, true],
    ['[ip, user, username, timestamp, request, status_code = 5* && status_code != 503, bytes]', apache, true],
    // The archived guide extracts "$7": "1534" here: the trailing comma is an unnamed field.
    ['[..., request=*.gif*, status_code=5*,]', apache, true],
    ['[..., status_code=50*,]', apache, true],
    ['[..., status_code=50*]', apache, false],
    ['[a, b, c, d, e, f, g, h]', apache, false],
  ]);
});

interface BadCase {
  pattern: string;
  position: number;
}

describe('invalid patterns', () => {
  const bad: BadCase[] = [
    { pattern: 'ERROR:', position: 5 },
    { pattern: 'ERROR }', position: 6 },
    { pattern: 'naïve', position: 2 },
    { pattern: '"ERROR', position: 0 },
    { pattern: 'ok ""', position: 3 },
    { pattern: '"a"b', position: 3 },
    { pattern: 'ERROR -', position: 7 },
    { pattern: '? ERROR', position: 1 },
    { pattern: '{ $.a = 1', position: 9 },
    { pattern: '{ $.a = }', position: 8 },
    { pattern: '{ a = 1 }', position: 2 },
    { pattern: '{ $a = 1 }', position: 3 },
    { pattern: '{ $.a == 1 }', position: 7 },
    { pattern: '{ $.a > "x" }', position: 8 },
    { pattern: '{ $.a > abc }', position: 8 },
    { pattern: '{ $.a > %x% }', position: 8 },
    { pattern: '{ $.a IS NOT NULL }', position: 6 },
    { pattern: '{ $.a IS MISSING }', position: 9 },
    { pattern: '{ $.a EXISTS }', position: 6 },
    { pattern: '{ $.a NOT THERE }', position: 10 },
    { pattern: '{ ($.a = 1 }', position: 11 },
    { pattern: '{ $.a = 1 } x', position: 12 },
    { pattern: '{ $.a = foo@bar }', position: 11 },
    { pattern: '{ $.a[x] = 1 }', position: 6 },
    { pattern: '{ $.a[*].b[*] = 1 }', position: 10 },
    { pattern: '{ $.a[*] = 1 || $.b[*] = 1 || $.c[*] = 1 || $.d[*] = 1 }', position: 47 },
    { pattern: '{ $.a = %a% && $.b = %b% && $.c = %c% }', position: 34 },
    { pattern: '{}', position: 1 },
    { pattern: '[a, b', position: 5 },
    { pattern: '[]', position: 1 },
    { pattern: '[a,, b]', position: 3 },
    { pattern: '[a, ..., b, ..., c]', position: 12 },
    { pattern: '[a, a]', position: 4 },
    // awsdocs/amazon-cloudwatch-logs-user-guide#21: AWS answers "Invalid filter pattern".
    { pattern: '[ip, user, username, timestamp, request, status_code = 4* && bytes > 1000]', position: 61 },
    { pattern: '[a = 1 && a]', position: 11 },
    { pattern: '[a b]', position: 3 },
    { pattern: '%something!%', position: 10 },
    { pattern: '%(a)%', position: 1 },
    { pattern: '%a\\(%', position: 3 },
    { pattern: '%abc', position: 0 },
    { pattern: '%%', position: 0 },
    { pattern: '%a% %b%', position: 4 },
    { pattern: '%é%', position: 1 },
    { pattern: '%a{x}%', position: 2 },
    { pattern: '%a}%', position: 2 },
    { pattern: '%a]%', position: 2 },
    { pattern: '%[ab%', position: 1 },
    { pattern: '%\\b%', position: 1 },
    { pattern: '%\\xZZ%', position: 1 },
    { pattern: '%a**%', position: 0 },
    { pattern: '%a{2000}%', position: 0 },
    { pattern: '%.{1000}.{1000}%', position: 0 },
    { pattern: 'x'.repeat(1025), position: 1024 },
  ];

  it.each(bad)('$pattern is refused at position $position', ({ pattern, position }) => {
    let caught: unknown;
    try {
      parseFilterPattern(pattern);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(AppError);
    const error = caught as AppError;
    expect(error.code).toBe('logs:filter-pattern:invalid');
    expect(error.metadata).toEqual({ position });
    expect(error.message).toMatch(new RegExp(` at position ${position}$`));
    expect(() => compileFilterPattern(pattern)).toThrow(AppError);
  });

  it('accepts a pattern of exactly 1024 characters', () => {
    expect(compileFilterPattern('x'.repeat(1024))('x'.repeat(1024))).toBe(true);
  });
});

/** Asserts the only thing `parseFilterPattern` throws is the positioned AppError, and never a hidden bug. */
function expectParsesOrRefuses(pattern: string): void {
  try {
    parseFilterPattern(pattern);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    expect(error.code).toBe('logs:filter-pattern:invalid');
    expect(error.message).not.toContain('could not be parsed');
    const position = (error.metadata as { position: number }).position;
    expect(Number.isInteger(position) && position >= 0 && position <= pattern.length).toBe(true);
  }
}

describe('robustness', () => {
  const syntax = fc.constantFrom(
    ...'{}[]()%$.*"\\ =!<>&|?-,_\'aZ09é😀\t'.split(''),
    '&&',
    '||',
    '...',
    '$.',
    'IS NULL',
    'NOT EXISTS',
    '[*]',
    '[0]',
    '{1,2}',
  );
  const syntaxString = fc.array(syntax, { maxLength: 60 }).map((parts) => parts.join(''));

  it('throws nothing but the positioned AppError for random strings', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 80 }), expectParsesOrRefuses), { numRuns: 300 });
    fc.assert(fc.property(syntaxString, expectParsesOrRefuses), { numRuns: 1500 });
  });

  it('never throws while matching random events', () => {
    const patterns = [
      'ERROR -x',
      '?a ?b',
      '%a.b%',
      '{ $.a = 1 || $.b[*] = x* }',
      '{ $.* NOT EXISTS }',
      '[a, ..., b > 1]',
      '[a = "x", b]',
    ].map(compileFilterPattern);
    const event = fc.oneof(fc.string({ unit: 'binary', maxLength: 80 }), syntaxString, fc.json());
    fc.assert(
      fc.property(event, (message) => {
        for (const predicate of patterns) expect(typeof predicate(message)).toBe('boolean');
      }),
      { numRuns: 500 },
    );
  });

  it('refuses deeply nested and huge patterns without overflowing the stack', () => {
    for (const pattern of [
      `{${'('.repeat(10_000)}`,
      '['.repeat(10_000),
      `%${'['.repeat(10_000)}`,
      'a'.repeat(1_000_000),
    ]) {
      expect(() => parseFilterPattern(pattern)).toThrow(AppError);
    }
  });

  it('parses and evaluates nesting as deep as 1024 characters allow', () => {
    const depth = 500;
    const pattern = `{${'('.repeat(depth)}$.a=1${')'.repeat(depth)}}`;
    expect(pattern.length).toBeLessThanOrEqual(1024);
    expect(compileFilterPattern(pattern)('{"a":1}')).toBe(true);
  });

  it('matches large events in linear time', () => {
    const big = 'a'.repeat(1_000_000);
    const started = performance.now();
    expect(compileFilterPattern('%a*a*a*a*a*b%')(big)).toBe(false);
    expect(compileFilterPattern('%a{2,}$%')(big)).toBe(true);
    expect(compileFilterPattern('"aaaaaaaab"')(big)).toBe(false);
    expect(compileFilterPattern('[a, ..., b = x*]')(big.replace(/a{1000}/g, '$& '))).toBe(false);
    expect(compileFilterPattern('{ $.a[*] = 1 }')(`{"a":[${'2,'.repeat(200_000)}1]}`)).toBe(true);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('copes with deeply nested and truncated JSON events', () => {
    const deep = `{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    expect(compileFilterPattern('{ $.a[0] NOT EXISTS }')(deep)).toBe(false);
    expect(compileFilterPattern('{ $.a NOT EXISTS }')(`{"a":${'['.repeat(100_000)}`)).toBe(false);
  });
});
