/** Look-ups over the catalog data. */
import type { Endpoint, ModelRoute } from './catalog.types.js';
import { MODEL_ROUTES } from './models.js';

const BY_ID = new Map(MODEL_ROUTES.map((route) => [route.id, route]));

export function findRoute(modelId: string): ModelRoute | undefined {
  return BY_ID.get(modelId);
}

export function routesFor(endpoint: Endpoint): ModelRoute[] {
  return MODEL_ROUTES.filter((route) => route.endpoint === endpoint);
}

export function modelIdsFor(endpoint: Endpoint): string[] {
  return routesFor(endpoint).map((route) => route.id);
}

/** The routes a budget on part of the catalog counts (decisions §20): one model, a family or a kind. */
export function routesIn(part: 'MODEL' | 'FAMILY' | 'KIND', value: string): ModelRoute[] {
  const field = ({ MODEL: 'id', FAMILY: 'family', KIND: 'kind' } as const)[part];
  return MODEL_ROUTES.filter((route) => route[field] === value);
}

/** The value the request gives for `field`, or the default the spec shows, or undefined. */
export function effectiveValue(route: ModelRoute, body: Record<string, unknown>, field: string): unknown {
  if (Object.hasOwn(body, field) && body[field] !== undefined) return body[field];
  const spec = Object.hasOwn(route.fields, field) ? route.fields[field] : undefined;
  return spec && 'default' in spec ? spec.default : undefined;
}

export { MODEL_ROUTES };
export type * from './catalog.types.js';
