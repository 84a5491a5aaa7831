// A small interpreter of Logs Insights queries, enough for the aggregate (`stats`) queries Berth sends: commands
// `filter`, `fields <expr> as <name>` and `stats count(*) [as <name>] [by <field>, …]`, separated by `|`;
// expressions with `and`, `or`, `not`, comparisons, `like "s"` (substring) and `like /re/` (unanchored regex,
// Java syntax as far as Berth's portable subset goes), `in [...]`, arithmetic, `toMillis()`, `floor()`, `ceil()`,
// `abs()`, and the fields @timestamp, @message, @logStream, @log. Anything else is a MalformedQueryException, so a
// test never passes on a query the fake did not understand. Results are what Insights returns: one row per group of
// the `by` fields, each a list of {field, value} with the by-fields first, values as strings.
import { AwsError } from './core.js';
import type { QueryHandler, ResultRow, StoredLogEvent } from './logs.js';

type Value = string | number | boolean | undefined;

type Token =
  | { t: 'str'; v: string }
  | { t: 're'; v: RegExp }
  | { t: 'num'; v: number }
  | { t: 'id'; v: string }
  | { t: 'op'; v: string };

const malformed = (message: string) => new AwsError('MalformedQueryException', message);

/** Java regex (Berth's portable subset) to a JavaScript one with the `u` flag. */
function javaRegex(source: string): RegExp {
  const js = source
    .replace(/\\x\{([0-9A-Fa-f]+)\}/g, '\\u{$1}')
    // Escaped ASCII punctuation, in or out of a class, as a hex escape (valid in `u` mode where `\-`, `\"` are not).
    .replace(/\\([!-/:-@[-`{-~])/g, (_m, c: string) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  try {
    return new RegExp(js, 'u');
  } catch {
    throw malformed(`the fake cannot read the regex /${source}/`);
  }
}

function tokenize(query: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  const prev = () => tokens[tokens.length - 1];
  while (i < query.length) {
    const c = query[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === '"' || c === "'") {
      const end = query.indexOf(c, i + 1);
      if (end < 0) throw malformed('unterminated string');
      tokens.push({ t: 'str', v: query.slice(i + 1, end) });
      i = end + 1;
      continue;
    }
    const p = prev();
    if (c === '/' && p?.t === 'id' && p.v.toLowerCase() === 'like') {
      let j = i + 1;
      let source = '';
      while (j < query.length && query[j] !== '/') {
        if (query[j] === '\\') {
          source += query.slice(j, j + 2);
          j += 2;
        } else source += query[j++];
      }
      if (j >= query.length) throw malformed('unterminated regex');
      tokens.push({ t: 're', v: javaRegex(source.replace(/\\\//g, '/')) });
      i = j + 1;
      continue;
    }
    const num = /^\d+(\.\d+)?/.exec(query.slice(i));
    if (num) {
      tokens.push({ t: 'num', v: Number(num[0]) });
      i += num[0].length;
      continue;
    }
    if (c === '`') {
      const end = query.indexOf('`', i + 1);
      if (end < 0) throw malformed('unterminated field name');
      tokens.push({ t: 'id', v: query.slice(i + 1, end) });
      i = end + 1;
      continue;
    }
    const id = /^@?[A-Za-z_][A-Za-z0-9_.]*/.exec(query.slice(i));
    if (id) {
      tokens.push({ t: 'id', v: id[0] });
      i += id[0].length;
      continue;
    }
    const op = /^(>=|<=|!=|=|<|>|\(|\)|\[|\]|,|\||\+|-|\*|\/|%)/.exec(query.slice(i));
    if (!op) throw malformed(`unexpected character ${JSON.stringify(c)}`);
    tokens.push({ t: 'op', v: op[0] });
    i += op[0].length;
  }
  return tokens;
}

type Row = Record<string, Value>;
type Expr = (row: Row) => Value;

const num = (v: Value): number => (typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : Number.NaN);
const FUNCTIONS: Record<string, (args: Value[]) => Value> = {
  tomillis: ([v]) => num(v),
  floor: ([v]) => Math.floor(num(v)),
  ceil: ([v]) => Math.ceil(num(v)),
  abs: ([v]) => Math.abs(num(v)),
};

class Parser {
  private i = 0;
  constructor(private readonly tokens: Token[]) {}

  done(): boolean {
    return this.i >= this.tokens.length;
  }
  private peek(): Token | undefined {
    return this.tokens[this.i];
  }
  private isWord(word: string): boolean {
    const t = this.peek();
    return t?.t === 'id' && t.v.toLowerCase() === word;
  }
  private isOp(op: string): boolean {
    const t = this.peek();
    return t?.t === 'op' && t.v === op;
  }
  expectOp(op: string): void {
    if (!this.isOp(op)) throw malformed(`expected ${op}`);
    this.i++;
  }
  word(): string {
    const t = this.tokens[this.i++];
    if (t?.t !== 'id') throw malformed('expected a name');
    return t.v;
  }
  acceptWord(word: string): boolean {
    if (!this.isWord(word)) return false;
    this.i++;
    return true;
  }
  acceptOp(op: string): boolean {
    if (!this.isOp(op)) return false;
    this.i++;
    return true;
  }

  expr(): Expr {
    let left = this.and();
    while (this.acceptWord('or')) {
      const [a, b] = [left, this.and()];
      left = (r) => Boolean(a(r)) || Boolean(b(r));
    }
    return left;
  }
  private and(): Expr {
    let left = this.not();
    while (this.acceptWord('and')) {
      const [a, b] = [left, this.not()];
      left = (r) => Boolean(a(r)) && Boolean(b(r));
    }
    return left;
  }
  private not(): Expr {
    if (this.acceptWord('not')) {
      const inner = this.not();
      return (r) => !inner(r);
    }
    return this.comparison();
  }
  private comparison(): Expr {
    const left = this.additive();
    if (this.acceptWord('like')) {
      const t = this.tokens[this.i++];
      if (t?.t === 'str') return (r) => typeof left(r) === 'string' && (left(r) as string).includes(t.v);
      if (t?.t === 're') return (r) => typeof left(r) === 'string' && t.v.test(left(r) as string);
      throw malformed('like takes a string or a regex');
    }
    if (this.acceptWord('in')) {
      this.expectOp('[');
      const items: Value[] = [];
      while (!this.acceptOp(']')) {
        items.push(this.primary()({}));
        this.acceptOp(',');
      }
      return (r) => items.includes(left(r));
    }
    for (const op of ['>=', '<=', '!=', '=', '<', '>']) {
      if (!this.acceptOp(op)) continue;
      const right = this.additive();
      return (r) => {
        const [a, b] = [left(r), right(r)];
        if (a === undefined || b === undefined) return false;
        const [x, y] = typeof a === 'number' || typeof b === 'number' ? [num(a), num(b)] : [a, b];
        switch (op) {
          case '=':
            return x === y;
          case '!=':
            return x !== y;
          case '<':
            return x < y;
          case '<=':
            return x <= y;
          case '>':
            return x > y;
          default:
            return x >= y;
        }
      };
    }
    return left;
  }
  private additive(): Expr {
    let left = this.multiplicative();
    for (;;) {
      const op = this.acceptOp('+') ? '+' : this.acceptOp('-') ? '-' : undefined;
      if (op === undefined) return left;
      const [a, b] = [left, this.multiplicative()];
      left = op === '+' ? (r) => num(a(r)) + num(b(r)) : (r) => num(a(r)) - num(b(r));
    }
  }
  private multiplicative(): Expr {
    let left = this.primary();
    for (;;) {
      const op = ['*', '/', '%'].find((o) => this.acceptOp(o));
      if (op === undefined) return left;
      const [a, b] = [left, this.primary()];
      left =
        op === '*'
          ? (r) => num(a(r)) * num(b(r))
          : op === '/'
            ? (r) => num(a(r)) / num(b(r))
            : (r) => num(a(r)) % num(b(r));
    }
  }
  primary(): Expr {
    const t = this.tokens[this.i++];
    if (t === undefined) throw malformed('unexpected end of query');
    if (t.t === 'op' && t.v === '(') {
      const inner = this.expr();
      this.expectOp(')');
      return inner;
    }
    if (t.t === 'op' && t.v === '-') {
      const inner = this.primary();
      return (r) => -num(inner(r));
    }
    if (t.t === 'str' || t.t === 'num') return () => t.v;
    if (t.t === 'id') {
      if (this.acceptOp('(')) {
        const fn = FUNCTIONS[t.v.toLowerCase()];
        if (fn === undefined) throw malformed(`the fake does not implement ${t.v}()`);
        const args: Expr[] = [];
        while (!this.acceptOp(')')) {
          args.push(this.expr());
          this.acceptOp(',');
        }
        return (r) => fn(args.map((a) => a(r)));
      }
      const name = t.v;
      return (r) => r[name];
    }
    throw malformed('unexpected token');
  }
}

/** Splits the token list at the `|` between commands. */
function commands(tokens: Token[]): Token[][] {
  const out: Token[][] = [[]];
  for (const t of tokens) {
    if (t.t === 'op' && t.v === '|') out.push([]);
    else out[out.length - 1]!.push(t);
  }
  return out.filter((c) => c.length > 0);
}

/** Whether a query ends in aggregation (`stats`): the fake then answers it exactly with `runInsightsQuery`. */
export function isStatsQuery(queryString: string): boolean {
  return /(^|\|)\s*stats\s/i.test(queryString);
}

export type InsightsAnswer =
  /** A `stats` query: Insights' result rows. */
  | { kind: 'stats'; rows: ResultRow[]; recordsMatched: number }
  /** Any other query: the events it selects, in its order, cut at its `limit` (`recordsMatched` before the cut). */
  | { kind: 'events'; events: StoredLogEvent[]; recordsMatched: number };

/**
 * Runs a query over `events` (the query's groups in its StartQuery window, newest first). Besides the commands
 * above, a query without `stats` may have `fields` of plain names (every event keeps its default fields),
 * `sort @timestamp desc|asc` and `limit <n>`.
 */
export function runInsightsQuery(queryString: string, events: StoredLogEvent[], accountId: string): InsightsAnswer {
  let rows = events.map((event) => ({
    event,
    row: {
      '@timestamp': event.timestamp,
      '@message': event.message,
      '@logStream': event.logStreamName,
      '@log': `${accountId}:${event.logGroupName}`,
    } as Row,
  }));
  let result: ResultRow[] | undefined;
  let limit: number | undefined;
  for (const command of commands(tokenize(queryString))) {
    if (result !== undefined) throw malformed('the fake runs no command after stats');
    const p = new Parser(command);
    const name = p.word().toLowerCase();
    if (name === 'filter') {
      const predicate = p.expr();
      if (!p.done()) throw malformed('trailing tokens in filter');
      rows = rows.filter((r) => Boolean(predicate(r.row)));
    } else if (name === 'fields') {
      const defs: [string, Expr][] = [];
      do {
        const expr = p.expr();
        // A plain field name: every row has its default fields anyway.
        if (p.acceptWord('as')) defs.push([p.word(), expr]);
      } while (p.acceptOp(','));
      if (!p.done()) throw malformed('trailing tokens in fields');
      rows = rows.map((r) => {
        const row = { ...r.row };
        for (const [field, expr] of defs) row[field] = expr(r.row);
        return { event: r.event, row };
      });
    } else if (name === 'sort') {
      if (p.word() !== '@timestamp') throw malformed('the fake sorts by @timestamp only');
      const asc = p.acceptWord('asc');
      if (!asc) p.acceptWord('desc');
      if (!p.done()) throw malformed('trailing tokens in sort');
      rows = [...rows].sort(
        (a, b) => (asc ? 1 : -1) * (a.event.timestamp - b.event.timestamp || a.event.seq - b.event.seq),
      );
    } else if (name === 'limit') {
      limit = Number(p.primary()({}));
      if (!p.done() || !Number.isInteger(limit) || limit < 1) throw malformed('limit takes a positive integer');
    } else if (name === 'stats') {
      if (p.word().toLowerCase() !== 'count') throw malformed('the fake implements stats count(*) only');
      p.expectOp('(');
      p.expectOp('*');
      p.expectOp(')');
      const alias = p.acceptWord('as') ? p.word() : 'count(*)';
      const by: string[] = [];
      if (p.acceptWord('by')) {
        do by.push(p.word());
        while (p.acceptOp(','));
      }
      if (!p.done()) throw malformed('trailing tokens in stats');
      const groups = new Map<string, { keys: Value[]; n: number }>();
      for (const { row } of rows) {
        const keys = by.map((f) => row[f]);
        const key = JSON.stringify(keys);
        const g = groups.get(key) ?? { keys, n: 0 };
        g.n += 1;
        groups.set(key, g);
      }
      result = [...groups.values()].map((g) => [
        ...by.map((field, i) => ({ field, value: g.keys[i] === undefined ? '' : String(g.keys[i]) })),
        { field: alias, value: String(g.n) },
      ]);
    } else {
      throw malformed(`the fake does not implement the ${name} command`);
    }
  }
  if (result !== undefined) return { kind: 'stats', rows: result.slice(0, limit), recordsMatched: rows.length };
  return { kind: 'events', events: rows.slice(0, limit).map((r) => r.event), recordsMatched: rows.length };
}

/**
 * A query handler that runs every query as Insights would (within what the interpreter knows): the filters of a
 * row query too, where the default handler answers every event of the window and leaves filtering to Berth.
 */
export const exactQueryHandler: QueryHandler = (query, ctx) => {
  const answer = runInsightsQuery(query.queryString, ctx.eventsInWindow(), ctx.accountId);
  const cut = query.limit ?? 10_000;
  if (answer.kind === 'stats') return { rows: answer.rows.slice(0, cut), recordsMatched: answer.recordsMatched };
  return { rows: answer.events.slice(0, cut).map((e) => ctx.toRow(e)), recordsMatched: answer.recordsMatched };
};
