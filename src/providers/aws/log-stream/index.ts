// The log stream source of `aws` accounts (FilterLogEvents history and tail, and the window-fed live tail).
export { AWS_STREAM_DEFAULTS, AwsStreamSource, type AwsStreamOptions } from './source.js';
export type { AwsCursor, AwsResumePosition, AwsWireCursor } from './cursor.js';
export type { TailBatch } from './tail-read.js';
export { resolveCursor, windowBatch } from './live.js';
export { UnreadableEventError } from './events.js';
