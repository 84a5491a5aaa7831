/** Log levels Berth derives, without the schema library (the log explorer page imports them). */
export const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL', 'UNKNOWN'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
