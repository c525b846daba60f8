/**
 * Fixture builders: the requests and task states tests need, built the way the service builds
 * them (the catalog's routes, the engine's quote, the ledger's hold, the task store's record),
 * so a test reads as a worked example and never forces a row by hand.
 */
import type { Gateway } from '../../src/bootstrap.js';
import { findRoute } from '../../src/catalog/catalog.js';
import type { Endpoint } from '../../src/catalog/catalog.types.js';
import { requestHash } from '../../src/gateway/gateway-answers.js';
import { LedgerService, type HoldOutcome } from '../../src/ledger/ledger.service.js';
import { quote, type Quote } from '../../src/pricing/engine.js';
import { Decimal, Money } from '../../src/pricing/money.js';
import { PriceBookService } from '../../src/pricing/price-book.service.js';
import { SettlementService } from '../../src/tasks/settlement.service.js';
import { TaskStore } from '../../src/tasks/task-store.js';

export type Body = Record<string, unknown>;

/** A chat submission: glm-5.3 (credits), one short user message, max_tokens 100. */
export function chatBody(overrides: Body = {}): Body {
  return { model: 'glm-5.3', messages: [{ role: 'user', content: 'hello' }], max_tokens: 100, ...overrides };
}

/** An image submission: seedream-4.0 at its default 2K, one image: 0.04 USD, exact. */
export function imageBody(overrides: Body = {}): Body {
  return { model: 'seedream-4.0', prompt: 'a red fox', ...overrides };
}

/** A video submission: sora-2-pro, 10 s (0.48 USD per request), exact. */
export function videoBody(overrides: Body = {}): Body {
  return { model: 'sora-2-pro', prompt: 'waves', duration: 10, ...overrides };
}

export interface HeldTask {
  taskId: string;
  quote: Quote;
}

/**
 * A task as a submission leaves it after its hold and before the vendor answered (`submitting`):
 * quoted by the engine with the price book in force, held by the ledger. No vendor call is made.
 */
export async function heldTask(
  gw: Gateway,
  options: { projectId: string; body?: Body; idempotencyKey?: string; acceptedAt?: Date; endUser?: string },
): Promise<HeldTask> {
  const outcome = await holdFor(gw, options);
  if (outcome.outcome !== 'held') throw new Error(`expected a hold, got ${outcome.outcome}`);
  return { taskId: outcome.taskId, quote: quoteFor(gw, options.body ?? imageBody()) };
}

/** The ledger's answer to a submission's hold, whatever it is (held, refused, replay…). */
export async function holdFor(
  gw: Gateway,
  options: { projectId: string; body?: Body; idempotencyKey?: string; acceptedAt?: Date; endUser?: string },
): Promise<HoldOutcome> {
  const body = options.body ?? imageBody();
  const route = findRoute(String(body.model))!;
  const books = gw.app.get(PriceBookService);
  const q = quoteFor(gw, body);
  const endpoint: Endpoint = route.endpoint;
  return gw.app.get(LedgerService).hold({
    projectId: options.projectId,
    apiKeyId: null,
    model: route.id,
    family: route.family,
    kind: route.kind,
    hold: Money.of(q.unit, q.amount),
    quote: q,
    priceBookVersion: books.inForce().version,
    ...(options.idempotencyKey
      ? { idempotencyKey: options.idempotencyKey, requestHash: requestHash(endpoint, body) }
      : {}),
    ...(options.acceptedAt ? { acceptedAt: options.acceptedAt } : {}),
    ...(options.endUser ? { endUser: options.endUser } : {}),
  });
}

/** The task an outcome names (a hold, a replay, a conflict); a refusal names none. */
export function taskIdOf(outcome: HoldOutcome): string {
  if (!('taskId' in outcome) || !outcome.taskId) throw new Error(`expected a task, got ${outcome.outcome}`);
  return outcome.taskId;
}

/** A held task the vendor accepted as `upstreamTaskId` (`processing`), recorded as the gateway records it. */
export async function acceptedTask(
  gw: Gateway,
  options: { projectId: string; upstreamTaskId: string; body?: Body; acceptedAt?: Date; endUser?: string },
): Promise<HeldTask> {
  const held = await heldTask(gw, options);
  const recorded = await gw.app.get(TaskStore).recordAccepted({
    taskId: held.taskId,
    upstreamId: `vd_${options.upstreamTaskId}`,
    upstreamTaskId: options.upstreamTaskId,
    responseBody: JSON.stringify({
      code: 1000,
      data: { id: `vd_${options.upstreamTaskId}`, taskId: Number(options.upstreamTaskId), status: 'processing' },
    }),
  });
  if (!recorded) throw new Error(`task ${held.taskId} was not recorded`);
  return held;
}

function quoteFor(gw: Gateway, body: Body): Quote {
  const route = findRoute(String(body.model));
  if (!route) throw new Error(`no route for ${String(body.model)}`);
  return quote({ route, body }, gw.app.get(PriceBookService).inForce());
}

/**
 * Settles a project's task, named by the vendor's id, as the poller does when the vendor answers
 * `ready` with `usage` (priced by the engine). True when this call settled it.
 */
export async function settleReady(gw: Gateway, projectId: string, upstreamTaskId: string, usage?: unknown) {
  const task = await gw.app.get(TaskStore).findByUpstreamId(upstreamTaskId, projectId);
  return gw.app.get(SettlementService).apply(task!, { status: 'ready', usage });
}

/** Settles a task as the vendor's ready image of seedream-4.0: an exact 0.04 USD charge. */
export function settleAsImage(gw: Gateway, taskId: string) {
  return gw.app.get(LedgerService).settle({
    taskId,
    status: 'ready',
    charge: {
      unit: 'USD',
      exactness: 'EXACT',
      amount: new Decimal('0.04'),
      lines: [],
      warnings: [],
      needsReview: false,
    },
    usage: {},
    rollup: { images: '1' },
  });
}
