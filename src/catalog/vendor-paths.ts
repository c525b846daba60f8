/**
 * Where the vendor's routes live (upstream-api.md): part of the catalog, beside the routes
 * themselves, so that validation can name the path a request belongs on and the client, the
 * poller, the gateway's own controller and the simulator all use the same paths. Plain TypeScript.
 */
import type { Endpoint } from './catalog.types.js';

/** Where the vendor's API lives, under its base URL; the gateway serves the same paths. */
export const VENDOR_API_ROOT = 'api-platform/v1';

export const VENDOR_PATHS = {
  submit: {
    chat: `/${VENDOR_API_ROOT}/chat/completions`,
    generations: `/${VENDOR_API_ROOT}/generations`,
  } satisfies Record<Endpoint, string>,
  task: (taskId: string | number) => `/${VENDOR_API_ROOT}/tasks/${taskId}`,
};
