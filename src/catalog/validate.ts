/**
 * Request validation driven by the catalog. Pure: no Nest, no I/O. Each problem names the field
 * (a JSON path like `messages[2].content[0].image_url.url`) and says why.
 */
import { modelIdsFor, findRoute } from './catalog.js';
import type { Endpoint, FieldSpec, ModelRoute } from './catalog.types.js';
import { VENDOR_PATHS } from './vendor-paths.js';

export interface FieldProblem {
  field: string;
  reason: string;
}

export type ValidationResult =
  { ok: true; route: ModelRoute; body: Record<string, unknown> } | { ok: false; problems: FieldProblem[] };

const MESSAGE_KEYS = new Set(['role', 'content']);
const BLOCK_TYPES = ['text', 'image_url', 'video_url'] as const;
/** Deeper than any request a route accepts (content blocks nest 5 levels) and far from any stack limit. */
export const MAX_NESTING = 32;

export function validateSubmission(endpoint: Endpoint, body: unknown): ValidationResult {
  if (!isPlainObject(body)) {
    return fail('body', 'must be a JSON object');
  }
  if (nestsDeeperThan(body, MAX_NESTING)) return fail('body', `nests deeper than ${MAX_NESTING} levels`);
  const model = own(body, 'model');
  const allowed = modelIdsFor(endpoint);
  if (model === undefined) return fail('model', `is required; one of: ${allowed.join(', ')}`);
  if (typeof model !== 'string') return fail('model', 'must be a string');
  const route = findRoute(model);
  if (!route) return fail('model', `unknown model "${clip(model)}"; one of: ${allowed.join(', ')}`);
  if (route.endpoint !== endpoint) {
    return fail(
      'model',
      `"${model}" is ${/^[aeiou]/.test(route.kind) ? 'an' : 'a'} ${route.kind} route; submit it to ${VENDOR_PATHS.submit[route.endpoint]}`,
    );
  }

  const problems: FieldProblem[] = [];
  for (const field of route.required) {
    if (own(body, field) === undefined) problems.push({ field, reason: `is required for ${route.id}` });
  }
  for (const [field, value] of Object.entries(body)) {
    if (field === 'model') continue;
    // Own properties only: "constructor" or "toString" must not find Object.prototype's.
    const spec = own(route.fields, field);
    if (!spec) {
      problems.push({ field, reason: `is not offered by ${route.id}` });
      continue;
    }
    if (value === undefined) continue;
    checkField(route, field, spec, value, problems);
  }
  checkPairs(route, body, problems);
  checkEffortAlias(body, problems);
  return problems.length === 0 ? { ok: true, route, body } : { ok: false, problems };
}

function checkField(route: ModelRoute, field: string, spec: FieldSpec, value: unknown, out: FieldProblem[]): void {
  switch (spec.type) {
    case 'string':
      if (typeof value !== 'string') return void out.push({ field, reason: 'must be a string' });
      if (spec.minLength && value.length < spec.minLength) return void out.push({ field, reason: 'must not be empty' });
      if (spec.allowed && !spec.allowed.includes(value)) {
        out.push({
          field,
          reason: `"${clip(value)}" is not allowed on ${route.id}; allowed: ${spec.allowed.join(', ')}`,
        });
      }
      return;
    case 'integer':
      // Past 2^53 a JSON number is no longer the integer that was written (…993 reads as …992).
      if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
        return void out.push({
          field,
          reason: Number.isInteger(value) ? 'must be an integer below 2^53' : 'must be an integer',
        });
      }
      if (spec.allowed && !spec.allowed.includes(value)) {
        return void out.push({
          field,
          reason: `${value} is not allowed on ${route.id}; allowed: ${spec.allowed.join(', ')}`,
        });
      }
      if (spec.min !== undefined && value < spec.min) {
        return void out.push({ field, reason: `${value} is below the minimum ${spec.min} on ${route.id}` });
      }
      if (spec.max !== undefined && value > spec.max) {
        out.push({ field, reason: `${value} is above the maximum ${spec.max} on ${route.id}` });
      }
      return;
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value))
        return void out.push({ field, reason: 'must be a number' });
      if (spec.allowed && !spec.allowed.includes(value)) {
        out.push({ field, reason: `${value} is not allowed on ${route.id}; allowed: ${spec.allowed.join(', ')}` });
      }
      return;
    case 'boolean':
      if (typeof value !== 'boolean') out.push({ field, reason: 'must be true or false' });
      return;
    case 'url':
      checkUrl(field, value, out);
      return;
    case 'url[]':
      if (!Array.isArray(value)) return void out.push({ field, reason: 'must be an array of URLs' });
      if (spec.maxItems !== undefined && value.length > spec.maxItems) {
        return void out.push({ field, reason: `has ${value.length} items; at most ${spec.maxItems}` });
      }
      value.forEach((item, i) => checkUrl(`${field}[${i}]`, item, out));
      return;
    case 'enumObject':
      checkEnumObject(route, field, spec, value, out);
      return;
    case 'messages':
      checkMessages(route, value, out);
      return;
  }
}

function checkEnumObject(
  route: ModelRoute,
  field: string,
  spec: Extract<FieldSpec, { type: 'enumObject' }>,
  value: unknown,
  out: FieldProblem[],
): void {
  if (!isPlainObject(value))
    return void out.push({ field, reason: `must be an object like {"${spec.key}": "${spec.allowed[0]}"}` });
  for (const key of Object.keys(value)) {
    if (key !== spec.key) out.push({ field: `${field}.${key}`, reason: `is not offered by ${route.id}` });
  }
  const inner = own(value, spec.key);
  if (inner === undefined) return;
  if (typeof inner !== 'string' || !spec.allowed.includes(inner)) {
    out.push({ field: `${field}.${spec.key}`, reason: `must be one of: ${spec.allowed.join(', ')}` });
  }
}

function checkMessages(route: ModelRoute, value: unknown, out: FieldProblem[]): void {
  if (!Array.isArray(value)) return void out.push({ field: 'messages', reason: 'must be an array of messages' });
  if (value.length === 0) return void out.push({ field: 'messages', reason: 'must contain at least one message' });
  let images = 0;
  let videos = 0;
  value.forEach((message, i) => {
    const at = `messages[${i}]`;
    if (!isPlainObject(message)) return void out.push({ field: at, reason: 'must be an object with role and content' });
    for (const key of Object.keys(message)) {
      if (!MESSAGE_KEYS.has(key))
        out.push({ field: `${at}.${key}`, reason: 'is not a message field; messages take role and content' });
    }
    const role = own(message, 'role');
    if (typeof role !== 'string' || role.length === 0) {
      out.push({ field: `${at}.role`, reason: 'must be a non-empty string' });
    }
    const content = own(message, 'content');
    if (typeof content === 'string') return;
    if (!Array.isArray(content))
      return void out.push({ field: `${at}.content`, reason: 'must be a string or an array of content blocks' });
    if (!route.media) {
      return void out.push({
        field: `${at}.content`,
        reason: `content arrays are only offered on Gemini-family routes; ${route.id} takes a string`,
      });
    }
    content.forEach((block, j) => {
      const kind = checkBlock(`${at}.content[${j}]`, block, out);
      if (kind === 'image_url') images += 1;
      if (kind === 'video_url') videos += 1;
    });
  });
  if (route.media && images > route.media.maxImages) {
    out.push({
      field: 'messages',
      reason: `has ${images} images; ${route.id} accepts at most ${route.media.maxImages} per request`,
    });
  }
  if (route.media && videos > route.media.maxVideos) {
    out.push({
      field: 'messages',
      reason: `has ${videos} videos; ${route.id} accepts at most ${route.media.maxVideos} per request`,
    });
  }
}

function checkBlock(at: string, block: unknown, out: FieldProblem[]): string | undefined {
  if (!isPlainObject(block)) return void out.push({ field: at, reason: 'must be a content block object' });
  const type = own(block, 'type');
  if (typeof type !== 'string' || !(BLOCK_TYPES as readonly string[]).includes(type)) {
    return void out.push({ field: `${at}.type`, reason: `must be one of: ${BLOCK_TYPES.join(', ')}` });
  }
  for (const key of Object.keys(block)) {
    if (key !== 'type' && key !== type)
      out.push({ field: `${at}.${key}`, reason: `is not a field of a ${type} block` });
  }
  if (type === 'text') {
    if (typeof own(block, 'text') !== 'string') out.push({ field: `${at}.text`, reason: 'must be a string' });
    return type;
  }
  const media = own(block, type);
  if (!isPlainObject(media)) return void out.push({ field: `${at}.${type}`, reason: 'must be an object with url' });
  for (const key of Object.keys(media)) {
    if (key !== 'url') out.push({ field: `${at}.${type}.${key}`, reason: 'is not offered; media blocks take url' });
  }
  checkUrl(`${at}.${type}.url`, own(media, 'url'), out);
  return type;
}

/** Media the vendor fetches: absolute HTTPS URLs only, as the spec asks of content blocks. */
function checkUrl(field: string, value: unknown, out: FieldProblem[]): void {
  if (typeof value !== 'string') return void out.push({ field, reason: 'must be a URL string' });
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    return void out.push({ field, reason: 'must be an absolute URL' });
  }
  if (parsed.protocol !== 'https:') out.push({ field, reason: 'media URLs must be absolute HTTPS URLs (https://…)' });
}

function checkPairs(route: ModelRoute, body: Record<string, unknown>, out: FieldProblem[]): void {
  for (const [field, partner] of Object.entries(route.pairedWith ?? {})) {
    if (own(body, field) !== undefined && own(body, partner) === undefined) {
      out.push({ field, reason: `is paired with ${partner}; send ${partner} as the starting image` });
    }
  }
}

/** Claude: reasoning_effort is an alias of output_config.effort; two different values are a conflict. */
function checkEffortAlias(body: Record<string, unknown>, out: FieldProblem[]): void {
  const alias = own(body, 'reasoning_effort');
  const config = own(body, 'output_config');
  const effort = isPlainObject(config) ? own(config, 'effort') : undefined;
  if (typeof alias === 'string' && typeof effort === 'string' && alias !== effort) {
    out.push({
      field: 'reasoning_effort',
      reason: `is an alias of output_config.effort and conflicts with it ("${alias}" vs "${effort}")`,
    });
  }
}

/** `obj[key]` when `key` is the object's own property; never a value inherited from a prototype. */
export function own<T>(obj: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(obj, key) ? obj[key] : undefined;
}

/** Whether a JSON value nests deeper than `limit` arrays and objects (iterative: no stack to exhaust). */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (depth > limit) return true;
    if (typeof node !== 'object' || node === null) continue;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function fail(field: string, reason: string): ValidationResult {
  return { ok: false, problems: [{ field, reason }] };
}

function clip(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
