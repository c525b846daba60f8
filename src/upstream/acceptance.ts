/**
 * The vendor's acceptance of a submission, `{ code: 1000, data: { id, taskId } }`, and the task
 * states it names, however they arrive: a JSON answer (the gateway, the poller) or one event of a
 * stream (the event-stream reader).
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
