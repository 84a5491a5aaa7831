// GET /cloud/logs/stream on the wire: the data of each SSE message, as a client parses it.

/** One log event, with its times as ISO strings. */
export interface WireEvent {
  logStreamName: string;
  message: string;
  timestamp: string;
  ingestionTime: string;
  level: string;
}

/** The JSON of a message's `data:` line; `isFinal` on the last one before the server ends the stream. */
export interface Payload {
  events: WireEvent[];
  isFinal: boolean;
}
