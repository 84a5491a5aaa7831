import type { FilteredLogEvent } from '@aws-sdk/client-cloudwatch-logs';
import { deriveLevel } from '../../../core/log-level.js';
import type { StreamEvent } from '../../log-stream/port.js';

/** Oldest first by (timestamp, eventId): the order history and the tail deliver events in. */
export const byEventKey = (a: StreamEvent, b: StreamEvent) =>
  a.timestamp - b.timestamp || (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0);

/** Thrown for an answer no event can be read from: the stream reports it rather than skip the event in silence. */
export class UnreadableEventError extends Error {
  override name = 'UnreadableEventError';
}

/**
 * An event as FilterLogEvents answered it. The SDK hands JSON fields over without checking their types, so an
 * event whose id or time is missing or of the wrong type (a broken AWS-compatible endpoint) fails the read: the
 * stream then reports the error rather than skip the event in silence.
 */
export function toStreamEvent(e: FilteredLogEvent, logGroup: string): StreamEvent {
  const { eventId, timestamp, ingestionTime, message, logStreamName } = e as Record<keyof FilteredLogEvent, unknown>;
  const text = (v: unknown) => v === undefined || v === null || typeof v === 'string';
  if (
    typeof eventId !== 'string' ||
    eventId === '' ||
    !Number.isSafeInteger(timestamp) ||
    !text(message) ||
    !text(logStreamName)
  ) {
    throw new UnreadableEventError(
      `FilterLogEvents answered an event that cannot be read: ${JSON.stringify(e).slice(0, 200)}`,
    );
  }
  const body = (message as string | null | undefined) ?? '';
  return {
    eventId,
    logStreamName: (logStreamName as string | null | undefined) ?? '',
    message: body,
    timestamp: timestamp as number,
    ingestionTime: Number.isSafeInteger(ingestionTime) ? (ingestionTime as number) : (timestamp as number),
    level: deriveLevel(body),
    logGroup,
  };
}
