/**
 * Reads a `text/event-stream` answer as it passes through the gateway (decisions §1), for the
 * facts the ledger needs: the vendor's task identity, a terminal status, and usage. The bytes
 * themselves are relayed untouched; this only watches them. Plain TypeScript.
 *
 * The vendor's stream format is not shown, so the reader is liberal in what it accepts:
 * - events follow the SSE rules (`data:` lines, a blank line ends an event, `[DONE]` is a marker);
 * - an event whose data is `{ code: 1000, data: { id, taskId } }` names the task (as a JSON
 *   submission answer would); `data.status` ready/failed/processing is the task's state;
 * - usage may come as `usage`, `data.usage`, `message.usage` (Anthropic's message_start),
 *   `response.usage` or `usageMetadata` (Gemini). Vendors report cumulative counts, so usage seen
 *   in several events is merged field by field, a later value replacing an earlier one.
 */
import { StringDecoder } from 'node:string_decoder';
import { isObject, objectAt } from '../common/json.js';
import { safeJson } from '../common/json.js';
import {
  acceptanceOf,
  isVendorTaskStatus,
  streamState,
  upstreamState,
  type StreamFacts,
  type UpstreamState,
} from './vendor-protocol.js';

export type { StreamFacts };

/** A polled answer, JSON or an event stream, as a task state; undefined when it is neither. */
export function polledState(contentType: string, text: string): UpstreamState | undefined {
  if (isEventStream(contentType)) return streamState(readEventStream(text));
  return upstreamState(safeJson(text));
}

/** An event larger than this is relayed but not read (a guard against unbounded buffering). */
const MAX_EVENT_CHARS = 1024 * 1024;

export class EventStreamReader {
  readonly facts: StreamFacts = { events: 0, done: false };
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  private data: string[] = [];
  private dataChars = 0;
  private skipLf = false;

  push(chunk: Buffer | string): void {
    this.feed(typeof chunk === 'string' ? chunk : this.decoder.write(chunk));
  }

  /** The stream ended: a last event without its blank line still counts. */
  end(): StreamFacts {
    this.feed(this.decoder.end());
    if (this.pending.length > 0) this.line(this.pending);
    this.pending = '';
    this.dispatch();
    return this.facts;
  }

  private feed(text: string): void {
    let start = 0;
    if (this.skipLf && text.startsWith('\n')) start = 1;
    this.skipLf = false;
    const buffer = this.pending + text.slice(start);
    let from = 0;
    for (let i = 0; i < buffer.length; i++) {
      const c = buffer.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line(buffer.slice(from, i));
      if (c === 13) {
        if (i + 1 < buffer.length) {
          if (buffer.charCodeAt(i + 1) === 10) i++;
        } else {
          this.skipLf = true; // a CR at the chunk's end may be half of a CRLF
        }
      }
      from = i + 1;
    }
    this.pending = buffer.slice(from);
    if (this.pending.length > MAX_EVENT_CHARS) this.pending = ''; // still relayed, just not read
  }

  private line(line: string): void {
    if (line === '') return this.dispatch();
    if (line.startsWith(':')) return; // comment / keep-alive
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    if (field !== 'data') return;
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    this.dataChars += value.length;
    if (this.dataChars <= MAX_EVENT_CHARS) this.data.push(value);
  }

  private dispatch(): void {
    if (this.data.length === 0) return;
    const text = this.data.join('\n');
    const tooBig = this.dataChars > MAX_EVENT_CHARS;
    this.data = [];
    this.dataChars = 0;
    this.facts.events++;
    if (tooBig) return;
    if (text.trim() === '[DONE]') {
      this.facts.done = true;
      return;
    }
    let event: unknown;
    try {
      event = JSON.parse(text);
    } catch {
      return; // not JSON: relayed, nothing to learn
    }
    if (isObject(event)) this.learn(event, text);
  }

  private learn(event: Record<string, unknown>, text: string): void {
    if (!this.facts.acceptance) {
      const acceptance = acceptanceOf(event);
      if (acceptance) this.facts.acceptance = { ...acceptance, body: text };
    }
    const data = objectAt(event, 'data');
    if (data && isVendorTaskStatus(data.status)) this.facts.status = data.status;
    for (const usage of [
      objectAt(event, 'usage'),
      data && objectAt(data, 'usage'),
      objectAt(objectAt(event, 'message'), 'usage'),
      objectAt(objectAt(event, 'response'), 'usage'),
      objectAt(event, 'usageMetadata'),
    ]) {
      if (usage) this.facts.usage = mergeUsage(this.facts.usage, usage);
    }
  }
}

/** Field by field, one level into nested objects (prompt_tokens_details, cache_creation). */
export function mergeUsage(
  earlier: Record<string, unknown> | undefined,
  later: Record<string, unknown>,
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...earlier };
  for (const [key, value] of Object.entries(later)) {
    if (value === null || value === undefined) continue;
    const before = merged[key];
    merged[key] = isObject(value) && isObject(before) ? { ...before, ...value } : value;
  }
  return merged;
}

/** Reads a whole buffered event stream (the poller's case). */
export function readEventStream(text: string): StreamFacts {
  const reader = new EventStreamReader();
  reader.push(text);
  return reader.end();
}

export function isEventStream(contentType: string): boolean {
  return contentType.split(';')[0]!.trim().toLowerCase() === 'text/event-stream';
}
