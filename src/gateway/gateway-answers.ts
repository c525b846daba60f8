/**
 * What the gateway answers a client on its own account (not the vendor's body): a budget's 402, a
 * repeated Idempotency-Key of unknown outcome, our record of a task the vendor forgot, and the
 * identity of a request for Idempotency-Key. Plain functions, no I/O.
 */
import { createHash } from 'node:crypto';
import type { Attribution } from '../attribution/attribution.js';
import type { Endpoint } from '../catalog/catalog.types.js';
import { ApiError } from '../common/api-error.js';
import { catalogPartName } from '../common/scope-names.js';
import type { HoldOutcome } from '../ledger/ledger.service.js';
import type { Money } from '../pricing/money.js';
import type { TaskRecordView } from '../tasks/task-store.js';
import { vendorTypeOf } from '../upstream/vendor-protocol.js';
import type { GatewayReply } from './gateway-reply.js';

/**
 * The client's poll of a task the vendor answers "not found": our record of it, never a 5xx
 * (decisions §10). The "not found" counts toward making it unknown (TaskStore.vendorMissing); `data`
 * is the vendor's task shape with our status, `gateway` says why.
 */
export function recordAnswer(view: TaskRecordView): GatewayReply {
  const data = {
    id: view.upstreamId,
    taskId: Number(view.upstreamTaskId),
    type: vendorTypeOf(view.kind),
    model: view.model,
    status: view.status,
  };
  const gateway = {
    status: view.status,
    needsReview: view.needsReview,
    reason:
      view.reviewReason ?? 'the vendor answered "not found" for this task; spendgate keeps its hold and polls it again',
  };
  return { status: 200, contentType: 'application/json', body: JSON.stringify({ code: 1000, data, gateway }) };
}

/**
 * The 402 of a hard budget: what the request would hold and what remains, or by how much the budget is already overrun.
 */
export function budgetRefusal(
  held: Extract<HoldOutcome, { outcome: 'refused' }>,
  estimate: Money,
  hold: Money,
): ApiError {
  const unit = hold.unit;
  const remaining = held.remaining;
  const overrunBy = remaining.startsWith('-') ? remaining.slice(1) : undefined;
  const scope = held.scope === 'PROJECT' ? '' : `${describeScope(held)}, `;
  const part = held.model ? `${catalogPartName(held.model.modelScope, held.model.modelValue)} only, ` : '';
  const budget = `budget ${held.budgetId} (${part}${scope}${held.period.toLowerCase()}, hard limit ${held.limit} ${unit})`;
  const message = overrunBy
    ? `${budget} is overrun by ${overrunBy} ${unit}: it refuses every submission in ${unit} until its next period or a higher limit`
    : `${budget} would be exceeded: this request holds ${hold} and ${remaining} ${unit} remain`;
  return ApiError.paymentRequired(4020, message, {
    budgetId: held.budgetId,
    scope: held.scope,
    ...(held.scopeValue !== null ? { scopeValue: held.scopeValue } : {}),
    ...(held.subject ? { user: held.subject } : {}),
    ...(held.model ?? {}),
    period: held.period,
    unit,
    limit: held.limit,
    remaining,
    estimate: estimate.toFixed(),
    hold: hold.toFixed(),
    ...(overrunBy ? { overrunBy } : {}),
  });
}

/**
 * What a scoped budget counts, as a person reads it: "API key ab12…", "tag team=ml", "user u-7", "each user, here u-7".
 */
function describeScope(held: Extract<HoldOutcome, { outcome: 'refused' }>): string {
  switch (held.scope) {
    case 'PROJECT':
      return 'project';
    case 'API_KEY':
      return `API key ${held.scopeValue}`;
    case 'TAG':
      return `tag ${held.scopeValue}`;
    case 'USER':
      return `user ${held.scopeValue}`;
    case 'EACH_USER':
      return `each user, here ${held.subject}`;
  }
}

/** A repeated Idempotency-Key whose first request's outcome is unknown and was never answered. */
export function unknownOutcome(taskId: string, why: string): ApiError {
  return ApiError.gatewayTimeout(
    `${why} (task gw-${taskId}): its hold is kept for review and it is not sent to the vendor again`,
    {
      gatewayTaskId: `gw-${taskId}`,
    },
  );
}

/**
 * Same key + same body + same attribution means the same request (decisions §7): key order in the
 * body does not matter; a different end user or different tags make it a different request.
 */
export function requestHash(
  endpoint: Endpoint,
  body: unknown,
  attribution: Attribution = { user: null, tags: [] },
): string {
  const hash = createHash('sha256').update(endpoint).update('\n').update(canonical(body));
  if (attribution.user !== null || attribution.tags.length > 0) hash.update('\n').update(canonical(attribution));
  return hash.digest('hex');
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value as object)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value);
}
