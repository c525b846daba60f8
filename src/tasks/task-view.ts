/**
 * A task as GraphQL and the console read it (task-reads.service.ts builds it): its attribution,
 * estimate and charge with their lines, ledger entries, and what it costs after adjustments. Every
 * amount a Decimal in the task's unit.
 */
import type { Decimal } from '../pricing/money.js';
import type { ChargeLine, Exactness, Unit } from '../pricing/pricing.types.js';

export interface TaskView {
  taskId: string;
  internalId: string;
  projectId: string;
  apiKeyPrefix: string | null;
  user: string | null;
  tags: string[];
  model: string;
  kind: string;
  status: string;
  acceptedAt: Date;
  settledAt: Date | null;
  priceBookVersion: number;
  exactness: Exactness;
  unit: Unit;
  held: Decimal;
  needsReview: boolean;
  reviewReason: string | null;
  /** charge − hold when the charge passed the hold, else null (decisions §6). */
  overrun: Decimal | null;
  resolution: { outcome: 'CHARGE' | 'RELEASE'; reason: string; resolvedAt: Date } | null;
  estimate: ChargeView;
  charge: ChargeView | null;
  /** Σ of the task's adjustments (negative: credits), e.g. a resolution below the settled charge. */
  adjustments: Decimal;
  /** What the task costs after its adjustments: charge + adjustments; null until it is charged. */
  net: Decimal | null;
  ledgerEntries: Array<{
    id: string;
    kind: string;
    unit: Unit;
    amount: Decimal;
    effectiveAt: Date;
    createdAt: Date;
    reason: string | null;
  }>;
}

export interface ChargeView {
  unit: Unit;
  amount: Decimal;
  exactness: Exactness;
  tier: string | null;
  lines: ChargeLine[];
  warnings: string[];
}
