/**
 * The vendor's protocol, in one place (its paths are the catalog's: catalog/vendor-paths.ts): its acceptance of a
 * submission
 * (`{ code: 1000, data: { id, taskId } }`), and the task states it names (`data.status`, with
 * `data.usage` once terminal), however they arrive: a JSON answer (the gateway, the poller) or
 * the events of a stream (event-stream.ts reads those into StreamFacts). Plain TypeScript.
 */
import { isObject, objectAt } from '../common/json.js';

export interface Acceptance {
  id: string;
  taskId: string;
}

/** The acceptance a parsed body carries; undefined when it is not one. */
export function acceptanceOf(body: unknown): Acceptance | undefined {
  if (!isObject(body) || body.code !== 1000) return undefined;
  const data = objectAt(body, 'data');
  if (!data || typeof data.id !== 'string' || !Number.isSafeInteger(data.taskId)) return undefined;
  return { id: data.id, taskId: String(data.taskId) };
}

/** A task's state as the vendor names it in `data.status`. */
export type VendorTaskStatus = 'processing' | 'ready' | 'failed';

export function isVendorTaskStatus(value: unknown): value is VendorTaskStatus {
  return value === 'processing' || value === 'ready' || value === 'failed';
}

/** A task's state as settlement needs it: still processing, or terminal with its usage. */
export type UpstreamState = { status: 'processing' } | { status: 'ready' | 'failed'; usage: unknown };

/** What the events of a stream told (event-stream.ts collects them). */
export interface StreamFacts {
  /** The first `{ code: 1000, data: { id, taskId } }` event, verbatim: the acceptance record. */
  acceptance?: { id: string; taskId: string; body: string };
  status?: VendorTaskStatus;
  usage?: Record<string, unknown>;
  events: number;
  /** `data: [DONE]` was seen. */
  done: boolean;
}

/** Reads `data.status` (and `data.usage`) from a polled body; undefined when it is not a task record. */
export function upstreamState(body: unknown): UpstreamState | undefined {
  const data = isObject(body) ? objectAt(body, 'data') : undefined;
  return data && stateOf(data.status, data.usage);
}

/** The last task state a stream's events told; undefined when none did. */
export function streamState(facts: StreamFacts): UpstreamState | undefined {
  return stateOf(facts.status, facts.usage);
}

function stateOf(status: unknown, usage: unknown): UpstreamState | undefined {
  if (!isVendorTaskStatus(status)) return undefined;
  return status === 'processing' ? { status } : { status, usage };
}

/**
 * The vendor says it does not know the task: HTTP 404, or a body whose code says "not found"
 * (4040 or 404; the vendor documents no error codes, these are the common spellings). Repeated
 * over TASK_NOT_FOUND_AFTER_MS, the task becomes unknown and goes to review (decisions §10).
 */
export function isTaskNotFound(status: number, body: unknown): boolean {
  if (status === 404) return true;
  return isObject(body) && (body.code === 4040 || body.code === 404);
}

/** The vendor's `data.type` for a kind of task: video routes say video; image and chat routes say image. */
export function vendorTypeOf(kind: string): string {
  return kind === 'video' ? 'video' : 'image';
}
