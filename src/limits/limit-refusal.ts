/**
 * A limit's 429 (decisions §20), plain TypeScript: the one error shape with code 4290, the limit
 * named (what it counts, its amount, its use) and what frees it, and Retry-After.
 */
import { ApiError } from '../common/api-error.js';
import { LIMIT_KIND_NAMES } from '../common/scope-names.js';
import type { LimitRefusal } from '../ledger/holds.js';

export function limitRefusal(r: LimitRefusal): ApiError {
  const scope =
    r.scope === 'PROJECT'
      ? 'project'
      : r.scope === 'EACH_USER'
        ? `each user, here ${r.subject}`
        : `${r.scope === 'API_KEY' ? 'API key' : r.scope.toLowerCase()} ${r.scopeValue}`;
  const name = `limit ${r.limitId} (${scope}, ${r.limit} ${LIMIT_KIND_NAMES[r.kind]})`;
  const frees =
    r.kind === 'TASKS_IN_FLIGHT'
      ? `${r.used} tasks are in flight: it admits another when one of them settles, fails or is released`
      : r.kind === 'TOKENS_PER_MINUTE' && BigInt(r.adds) > BigInt(r.limit)
        ? `this request alone is estimated at ${r.adds} tokens: it never fits; lower max_tokens or the prompt`
        : `${r.used} counted this minute${r.kind === 'TOKENS_PER_MINUTE' ? `, this request estimated at ${r.adds}` : ''}: it admits more from ${r.windowEnd}`;
  return ApiError.tooMany(
    `${name} is reached: ${frees}; nothing was held or charged`,
    {
      limitId: r.limitId,
      kind: r.kind,
      scope: r.scope,
      ...(r.scopeValue !== null ? { scopeValue: r.scopeValue } : {}),
      ...(r.subject ? { user: r.subject } : {}),
      limit: r.limit,
      used: r.used,
      ...(r.kind === 'TOKENS_PER_MINUTE' ? { estimatedTokens: r.adds } : {}),
      ...(r.windowEnd ? { windowEnd: r.windowEnd } : {}),
    },
    r.retryAfter,
  );
}
