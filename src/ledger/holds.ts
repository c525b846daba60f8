/**
 * A hold at submission: what a request asks to hold, what can come of it, and the two SQL calls
 * that place it (their bodies: prisma/schema.sql). A batch of requests that arrived together goes
 * to spendgate_place_holds; a request alone, as at ordinary load, to spendgate_hold_one, which
 * writes only in the common case (priced right, every balance there and fitting) and otherwise
 * leaves the request to the batch function. LedgerService decides which (ledger.service.ts).
 */
import type { Database } from '../database/database.js';
import type { Quote } from '../pricing/engine.js';
import type { Money } from '../pricing/money.js';
import type { ChargeLine } from '../pricing/pricing.types.js';

type Db = Pick<Database, 'prepared'>;

export type BudgetScope = 'PROJECT' | 'API_KEY' | 'TAG' | 'USER' | 'EACH_USER';

/** What a limit counts (decisions §20; src/limits). */
export type LimitKind = 'REQUESTS_PER_MINUTE' | 'TASKS_IN_FLIGHT' | 'TOKENS_PER_MINUTE';

/** The limit that refused a request, as spendgate_limit_refusal answers it (its 429: limits/limit-refusal.ts). */
export interface LimitRefusal {
  limitId: string;
  kind: LimitKind;
  limit: string;
  used: string;
  /** What this request would have added: 1, or its estimated chat tokens. */
  adds: string;
  scope: BudgetScope;
  scopeValue: string | null;
  subject: string;
  /** Per-minute kinds: when the minute ends (ISO 8601). */
  windowEnd: string | null;
  retryAfter: number;
}

export interface HoldRequest {
  projectId: string;
  apiKeyId: string | null;
  model: string;
  family: string;
  kind: string;
  /** What the submission holds, in its unit (the quote's). */
  hold: Money;
  /** Attribution (decisions §7): which budgets count the task. */
  endUser?: string | null;
  tags?: readonly string[];
  quote: Quote;
  priceBookVersion: number;
  idempotencyKey?: string;
  requestHash?: string;
  /** The gateway's name for this submission, given before the hold (decisions §17; gateway/unsent-holds.ts). */
  submissionRef?: string;
  /** The acceptance instant; the gateway leaves it to the database clock (tests set it). */
  acceptedAt?: Date;
}

export type HoldOutcome =
  | { outcome: 'held'; taskId: string }
  /**
   * `remaining` is limit − spent − held as it stands: negative when the budget is overrun. `scope`
   * and `scopeValue` say what the budget counts (the key's prefix, "name=value", the user);
   * `subject` is the end user whose own balance refused, for an EACH_USER budget.
   */
  | {
      outcome: 'refused';
      budgetId: string;
      limit: string;
      remaining: string;
      period: string;
      scope: BudgetScope;
      scopeValue: string | null;
      subject: string;
      /** A budget on part of the catalog: which model, family or kind it counts (decisions §20). */
      model?: { modelScope: 'MODEL' | 'FAMILY' | 'KIND'; modelValue: string };
    }
  /** The first answer to this Idempotency-Key: the vendor's body (status null: 200) or the gateway's refusal. */
  | { outcome: 'replay'; taskId: string; responseBody: string; responseStatus: number | null }
  /** The first request's outcome is unknown and the gateway never answered it (it stopped). */
  | { outcome: 'unknown' | 'conflict' | 'in_progress'; taskId: string }
  /** A limit on the project's traffic refused it (decisions §20): nothing written. */
  | { outcome: 'limited'; refusal: LimitRefusal }
  /** Quoted with a price-book version that is not the one in force in the database: quote again (nothing written). */
  | { outcome: 'stale_price'; inForce: number };

interface HoldRow {
  i: number;
  outcome: HoldOutcome['outcome'];
  task_id: string | null;
  budget_id: string | null;
  budget_limit: string | null;
  budget_remaining: string | null;
  budget_period: string | null;
  response_body: string | null;
  response_status: number | null;
  budget_scope: BudgetScope | null;
  budget_scope_value: string | null;
  budget_subject: string | null;
  /** stale_price: the price-book version in force. */
  in_force: number | null;
}

/** Charge lines as the SQL functions take them: every figure an exact decimal string. */
export function linesPayload(lines: readonly ChargeLine[]) {
  return lines.map((l) => ({
    component: l.component,
    quantity: l.quantity.toFixed(),
    rate: l.rate.toFixed(),
    per: l.per.toFixed(),
    amount: l.amount.toFixed(),
    // Only when a contract term priced the line (decisions §19): the hold's payload is otherwise as it was.
    ...(l.listRate ? { listRate: l.listRate.toFixed(), listAmount: l.listAmount!.toFixed() } : {}),
  }));
}

/** Requests that arrived together, in one call of spendgate_place_holds: an outcome each, in order. */
export async function holdInBatch(db: Db, items: HoldRequest[]): Promise<HoldOutcome[]> {
  const payload = items.map((r, i) => ({
    i,
    project_id: r.projectId,
    api_key_id: r.apiKeyId,
    end_user: r.endUser ?? null,
    tags: r.tags ?? [],
    model: r.model,
    family: r.family,
    kind: r.kind,
    unit: r.hold.unit,
    hold_amount: r.hold.toFixed(),
    estimate_amount: r.quote.amount.toFixed(),
    exactness: r.quote.exactness,
    estimate_tier: r.quote.tier ?? null,
    estimate_warnings: r.quote.warnings,
    price_basis: r.quote.basis,
    price_book_version: r.priceBookVersion,
    lines: linesPayload(r.quote.lines),
    idempotency_key: r.idempotencyKey ?? null,
    request_hash: r.requestHash ?? null,
    accepted_at: r.acceptedAt?.toISOString() ?? null,
    submission_ref: r.submissionRef ?? null,
  }));
  const { rows } = await db.prepared<HoldRow>('place-holds', 'SELECT * FROM spendgate_place_holds($1::json)', [
    JSON.stringify(payload),
  ]);
  const byIndex = new Map(rows.map((row) => [row.i, row]));
  return items.map((_, i) => toOutcome(byIndex.get(i)!));
}

/**
 * A request alone: spendgate_hold_one, about three quarters of the batch function's cost to
 * PostgreSQL at a batch of one (bench/FINDINGS.md). Undefined when it wrote nothing
 * because the request needs the batch function: a balance to start (a new period, a new end
 * user), a hard limit that does not fit (a refusal), an Idempotency-Key already used.
 */
export async function holdAlone(db: Db, r: HoldRequest): Promise<HoldOutcome | undefined> {
  const lines = linesPayload(r.quote.lines); // as columns: one array per field
  const { rows } = await db.prepared<{
    outcome: 'held' | 'stale_price' | 'fallback';
    task_id: string | null;
    in_force: number | null;
  }>(
    'hold-one',
    'SELECT * FROM spendgate_hold_one($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)',
    [
      r.projectId,
      r.apiKeyId,
      r.endUser ?? null,
      r.tags ?? [],
      r.model,
      r.family,
      r.kind,
      r.hold.unit,
      r.hold.toFixed(),
      r.quote.amount.toFixed(),
      r.quote.exactness,
      r.quote.tier ?? null,
      r.quote.warnings,
      JSON.stringify(r.quote.basis),
      r.priceBookVersion,
      lines.map((l) => l.component),
      lines.map((l) => l.quantity),
      lines.map((l) => l.rate),
      lines.map((l) => l.per),
      lines.map((l) => l.amount),
      r.idempotencyKey ?? null,
      r.requestHash ?? null,
      r.acceptedAt ?? null,
      r.submissionRef ?? null,
    ],
  );
  const row = rows[0]!;
  if (row.outcome === 'held') return { outcome: 'held', taskId: String(row.task_id) };
  if (row.outcome === 'stale_price') return { outcome: 'stale_price', inForce: row.in_force! };
  return undefined;
}

function toOutcome(row: HoldRow): HoldOutcome {
  switch (row.outcome) {
    case 'held':
      return { outcome: 'held', taskId: String(row.task_id) };
    case 'refused':
      return {
        outcome: 'refused',
        budgetId: row.budget_id!,
        limit: row.budget_limit!,
        remaining: row.budget_remaining!,
        period: row.budget_period!,
        scope: row.budget_scope!,
        scopeValue: row.budget_scope_value,
        subject: row.budget_subject ?? '',
        ...(row.response_body
          ? { model: JSON.parse(row.response_body) as { modelScope: 'MODEL' | 'FAMILY' | 'KIND'; modelValue: string } }
          : {}),
      };
    case 'replay':
      return {
        outcome: 'replay',
        taskId: String(row.task_id),
        responseBody: row.response_body!,
        responseStatus: row.response_status,
      };
    case 'stale_price':
      return { outcome: 'stale_price', inForce: row.in_force! };
    case 'limited':
      return { outcome: 'limited', refusal: JSON.parse(row.response_body!) as LimitRefusal };
    default:
      return { outcome: row.outcome, taskId: String(row.task_id) };
  }
}
