import type { LogLevel as Level } from './level-names.js';

export { LOG_LEVELS as LEVELS, type LogLevel as Level } from './level-names.js';

const NAMES: Record<string, Level> = {
  trace: 'TRACE',
  debug: 'DEBUG',
  info: 'INFO',
  information: 'INFO',
  notice: 'INFO',
  warn: 'WARN',
  warning: 'WARN',
  error: 'ERROR',
  err: 'ERROR',
  fatal: 'FATAL',
  critical: 'FATAL',
  crit: 'FATAL',
  panic: 'FATAL',
  alert: 'FATAL',
  emerg: 'FATAL',
};

const LEVEL_KEYS = ['level', 'severity', 'lvl', 'loglevel', 'log.level'];

/** pino's numeric levels: 10 trace … 60 fatal. */
function fromNumber(n: number): Level {
  if (n >= 60) return 'FATAL';
  if (n >= 50) return 'ERROR';
  if (n >= 40) return 'WARN';
  if (n >= 30) return 'INFO';
  if (n >= 20) return 'DEBUG';
  if (n >= 10) return 'TRACE';
  return 'UNKNOWN';
}

function fromValue(value: unknown): Level | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return fromNumber(value);
  if (typeof value === 'string') return NAMES[value.trim().toLowerCase()];
  return undefined;
}

// A level word at the start of a line, after an optional timestamp: "ERROR …", "[warn] …", "2024-01-01T00:00:00Z INFO …".
const LEADING =
  /^\s*(?:\d{4}-\d{2}-\d{2}[T ][\d:.,]+(?:Z|[+-]\d{2}:?\d{2})?\s+)?[[(<]?(trace|debug|info|information|notice|warn|warning|error|err|fatal|critical|crit|panic|alert|emerg)[\])>:]?(?![A-Za-z])/i;

// PostgreSQL's jsonb refuses these escapes; such a message is treated as text everywhere, so SQL and in-process filtering agree.
const JSONB_UNSAFE =
  /\\u0000|\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}/;

/** The message parsed as a JSON object, or undefined. */
export function parseJsonMessage(message: string): Record<string, unknown> | undefined {
  const trimmed = message.trimStart();
  if (!trimmed.startsWith('{') || JSONB_UNSAFE.test(trimmed)) return undefined;
  try {
    const value: unknown = JSON.parse(trimmed);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** Derives a level from JSON fields (`level`, `severity`, `lvl`, pino numbers) or a line's leading token. */
export function deriveLevel(message: string, json = parseJsonMessage(message)): Level {
  if (json !== undefined) {
    for (const key of LEVEL_KEYS) {
      const level = fromValue(json[key]);
      if (level !== undefined) return level;
    }
    const nested = json.log;
    if (nested !== null && typeof nested === 'object') {
      const level = fromValue((nested as Record<string, unknown>).level);
      if (level !== undefined) return level;
    }
    return 'UNKNOWN';
  }
  const m = LEADING.exec(message.slice(0, 200));
  return m?.[1] ? (NAMES[m[1].toLowerCase()] ?? 'UNKNOWN') : 'UNKNOWN';
}
