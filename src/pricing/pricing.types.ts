/** Shared types of the pricing engine (plain TypeScript). */
import type { Decimal, Unit } from './money.js';

export type { Unit };
export type Exactness = 'EXACT' | 'ESTIMATE' | 'UNPRICED';

export type TokenClass = 'input' | 'output' | 'cache_read' | 'cache_write_5m' | 'cache_write_1h' | 'cache_write';
export const TOKEN_CLASSES: readonly TokenClass[] = [
  'input',
  'output',
  'cache_read',
  'cache_write_5m',
  'cache_write_1h',
  'cache_write',
];

export interface ChargeLine {
  /** e.g. `input`, `cache_read`, `video_seconds:720p`, `request:15s`, `images:2K`. */
  component: string;
  quantity: Decimal;
  /** The published rate, as the price list states it: per `per` units of quantity. */
  rate: Decimal;
  /** 1,000,000 for token lines (rates are per 1M tokens), 1 for seconds, requests and images. */
  per: Decimal;
  /** quantity × rate / per, exact. */
  amount: Decimal;
  /** Set when a contract term priced the line (contract.ts): the price book's rate and amount. */
  listRate?: Decimal;
  listAmount?: Decimal;
}

export interface Charge {
  unit: Unit;
  exactness: Exactness;
  /** Sum of the lines (what is owed, under the contract); zero when unpriced. */
  amount: Decimal;
  /** Set when a contract term changed a line: the amount at list prices (contract.ts). */
  listAmount?: Decimal;
  /** GPT-5.6: `base` (input <= 272,000) or `long`; otherwise the route's only tier. */
  tier?: string;
  lines: ChargeLine[];
  warnings: string[];
  /** Set when the figure needs a person's look (unknown usage, unrated token class...). */
  needsReview: boolean;
}
