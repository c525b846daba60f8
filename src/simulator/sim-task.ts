/** A task as the simulator keeps it (simulator.ts answers from it, journal.ts persists it). */
import type { ModelRoute } from '../catalog/catalog.types.js';

export interface SimTask {
  id: string;
  taskId: number;
  model: string;
  kind: ModelRoute['kind'];
  family: ModelRoute['family'];
  acceptedAt: number;
  readyAt: number;
  status: 'processing' | 'ready' | 'failed';
  /** Forced outcome set through /__sim/tasks/:taskId/complete. */
  forced?: { status: 'ready' | 'failed'; usage?: unknown };
  /**
   * A task the vendor never finishes (`stalled`: processing forever) or forgot (`forgotten`: its
   * polls answer 404), set through /__sim/tasks/:taskId/stall and /forget: the ghosts that review
   * by age and "not found" handling exist for (decisions §10), reproducible in the sandbox.
   */
  fate?: 'stalled' | 'forgotten';
  /** The request as sent (after a restart: only the fields the answers read, n and max_tokens). */
  request: Record<string, unknown>;
  /** Input tokens estimated from the request's messages, for the usage the task reports. */
  promptEstimate: number;
  /** Whether the client received the acceptance (false for hangs, resets, malformed bodies). */
  answered: boolean;
}
