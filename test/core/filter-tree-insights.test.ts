import { describe, expect, it } from 'vitest';
import { compileInsightsFilter, insightsCapabilities } from '../../src/core/filter-tree/compile-insights.js';
import { planFilter } from '../../src/core/filter-tree/plan.js';
import type { FilterNode } from '../../src/core/filter-tree/schema.js';

const insights = insightsCapabilities();
const withFields = insightsCapabilities({ pushJsonFields: true });

/** Plans for Insights, then compiles what is pushed. */
function queryFor(filter: FilterNode, pushJsonFields = false): string {
  const plan = planFilter(filter, pushJsonFields ? withFields : insights);
  return compileInsightsFilter(plan.pushed, { pushJsonFields }).command;
}

describe('compileInsightsFilter', () => {
  const table: Array<[string, FilterNode, string]> = [
    ['no filter', { kind: 'all' }, ''],
    [
      'case-sensitive contains',
      { kind: 'text', op: 'contains', value: 'disk full', caseSensitive: true },
      'filter @message like "disk full"',
    ],
    [
      'a double quote switches to single quotes',
      { kind: 'text', op: 'contains', value: 'say "hi"', caseSensitive: true },
      `filter @message like 'say "hi"'`,
    ],
    [
      'both quotes fall back to a regex',
      { kind: 'text', op: 'contains', value: `"it's"`, caseSensitive: true },
      `filter @message like /\\"it\\'s\\"/`,
    ],
    [
      'a backslash is never quoted',
      { kind: 'text', op: 'contains', value: 'C:\\tmp', caseSensitive: true },
      'filter @message like /C\\:\\\\tmp/',
    ],
    [
      'case-insensitive contains spells out folding classes',
      { kind: 'text', op: 'contains', value: 'Disk' },
      'filter @message like /[Dd][Ii][Ss\\x{17F}][Kk\\x{212A}]/',
    ],
    [
      'case-insensitive with nothing to fold stays a string',
      { kind: 'text', op: 'contains', value: '500 ' },
      'filter @message like "500 "',
    ],
    [
      'case-sensitive equals',
      { kind: 'text', op: 'equals', value: 'ok', caseSensitive: true },
      'filter @message = "ok"',
    ],
    ['case-insensitive equals is applied in process', { kind: 'text', op: 'equals', value: 'ok' }, ''],
    [
      'startsWith anchors a regex; slashes are escaped',
      { kind: 'text', op: 'startsWith', value: 'GET /api', caseSensitive: true },
      'filter @message like /^GET \\/api/',
    ],
    [
      'non-ASCII is written \\x{…}',
      { kind: 'text', op: 'startsWith', value: 'é', caseSensitive: false },
      'filter @message like /^[\\x{C9}\\x{E9}]/',
    ],
    [
      'a portable regex',
      { kind: 'text', op: 'regex', value: 'time(d)? ?out\\d+', caseSensitive: true },
      'filter @message like /time(d)? ?out[0-9]+/',
    ],
    [
      'a regex with a dot',
      { kind: 'text', op: 'regex', value: 'a.b', caseSensitive: true },
      'filter @message like /a[^\\n]b/',
    ],
    [
      'a case-insensitive regex',
      { kind: 'text', op: 'regex', value: 'ok|[a-c]' },
      'filter @message like /[Oo][Kk\\x{212A}]|[A-Ca-c]/',
    ],
    ['a regex with $ is applied in process', { kind: 'text', op: 'regex', value: 'done$', caseSensitive: true }, ''],
    [
      'a regex with \\b is applied in process',
      { kind: 'text', op: 'regex', value: '\\bdone', caseSensitive: true },
      '',
    ],
    ['level is applied in process', { kind: 'level', levels: ['ERROR'] }, ''],
    ['stream equals', { kind: 'stream', op: 'equals', value: 'web/1' }, 'filter @logStream = "web/1"'],
    ['stream prefix', { kind: 'stream', op: 'prefix', value: 'ecs/app/' }, 'filter @logStream like /^ecs\\/app\\//'],
    ['fields are applied in process by default', { kind: 'field', path: 'status', op: 'eq', value: 500 }, ''],
    [
      'and, or, not',
      {
        kind: 'and',
        nodes: [
          {
            kind: 'or',
            nodes: [
              { kind: 'stream', op: 'equals', value: 'a' },
              { kind: 'stream', op: 'equals', value: 'b' },
            ],
          },
          { kind: 'not', node: { kind: 'text', op: 'contains', value: 'health', caseSensitive: true } },
        ],
      },
      'filter (@logStream = "a" or @logStream = "b") and not (@message like "health")',
    ],
    [
      'a level under and is left out; under or it widens to every row',
      {
        kind: 'and',
        nodes: [
          { kind: 'stream', op: 'equals', value: 'a' },
          {
            kind: 'or',
            nodes: [
              { kind: 'level', levels: ['ERROR'] },
              { kind: 'text', op: 'contains', value: '5', caseSensitive: true },
            ],
          },
        ],
      },
      'filter @logStream = "a"',
    ],
    ['nothing matches', { kind: 'not', node: { kind: 'all' } }, ''],
  ];

  it.each(table)('%s', (_name, filter, expected) => {
    expect(queryFor(filter)).toBe(expected);
  });

  const fieldTable: Array<[string, FilterNode, string]> = [
    ['exists', { kind: 'field', path: 'user.id', op: 'exists' }, 'filter ispresent(user.id)'],
    ['eq number', { kind: 'field', path: 'http.status', op: 'eq', value: 500 }, 'filter http.status = 500'],
    [
      'eq string; other characters need backticks',
      { kind: 'field', path: 'request-id', op: 'eq', value: 'abc' },
      'filter `request-id` = "abc"',
    ],
    ['neq needs presence', { kind: 'field', path: 'a', op: 'neq', value: 'x' }, 'filter (ispresent(a) and a != "x")'],
    [
      'in strings',
      { kind: 'field', path: 'env', op: 'in', value: ['prod', 'stage'] },
      'filter env in ["prod", "stage"]',
    ],
    ['in with a number is applied in process', { kind: 'field', path: 'env', op: 'in', value: ['prod', 1] }, ''],
    ['gt number', { kind: 'field', path: 'ms', op: 'gt', value: 250.5 }, 'filter ms > 250.5'],
    ['gt string is applied in process', { kind: 'field', path: 'ms', op: 'gt', value: 'a' }, ''],
    ['an exponent is applied in process', { kind: 'field', path: 'ms', op: 'gt', value: 1e21 }, ''],
    ['eq boolean is applied in process', { kind: 'field', path: 'ok', op: 'eq', value: true }, ''],
    ['contains string', { kind: 'field', path: 'msg', op: 'contains', value: 'oops' }, 'filter msg like "oops"'],
  ];

  it.each(fieldTable)('with pushJsonFields: %s', (_name, filter, expected) => {
    expect(queryFor(filter, true)).toBe(expected);
  });

  it('says when nothing can match', () => {
    expect(compileInsightsFilter({ kind: 'not', node: { kind: 'all' } })).toEqual({
      command: '',
      matchesNothing: true,
      relaxed: false,
    });
  });

  it('leaves out a filter too long for one query, and says so', () => {
    const long: FilterNode = {
      kind: 'or',
      nodes: Array.from(
        { length: 20 },
        (_, i) =>
          ({ kind: 'text', op: 'contains', value: `${i}${'x'.repeat(400)}`, caseSensitive: true }) as FilterNode,
      ),
    };
    const plan = planFilter(long, insights);
    expect(plan.exact).toBe(true);
    expect(compileInsightsFilter(plan.pushed)).toEqual({ command: '', matchesNothing: false, relaxed: true });
  });

  it('refuses a leaf Insights cannot express', () => {
    expect(() => compileInsightsFilter({ kind: 'level', levels: ['INFO'] })).toThrow(/plan the filter first/);
  });
});
