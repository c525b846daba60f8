/**
 * The catalog as the money model knows it (decisions §3, §19, §20), from the vendor's price list
 * (upstream-api.md), not from the product's price book: what a media submission costs, the models
 * the tester sends with their family, kind and unit, and budgets on part of the catalog.
 */
import { Decimal } from 'decimal.js';
import { rateUnder, type Contract } from './contract-model.js';

export type Unit = 'USD' | 'CREDITS';
export type Month = string; // "2026-11"

export type Day = string; // "2026-11-30", UTC

/** The month before `month`. */
export function monthBefore(month: Month): Month {
  const [y, m] = month.split('-').map(Number) as [number, number];
  return new Date(Date.UTC(y, m - 2, 1)).toISOString().slice(0, 7);
}

/** The month a day is in. */
export function monthOf(day: Day): Month {
  return day.slice(0, 7);
}

/** A month's last day. */
export function lastDayOf(month: Month): Day {
  const [y, m] = month.split('-').map(Number) as [number, number];
  return new Date(Date.UTC(y, m, 0)).toISOString().slice(0, 10);
}

/** The Monday that starts a day's week: a weekly budget's period, calendar-aligned in UTC (decisions §4). */
export function weekOf(day: Day): Day {
  const at = new Date(`${day}T00:00:00Z`);
  return new Date(at.getTime() - ((at.getUTCDay() + 6) % 7) * 86_400_000).toISOString().slice(0, 10);
}

/** Today in UTC, read when asked: what the product's clock calls now. */
export function today(): Day {
  return new Date().toISOString().slice(0, 10);
}

/** The spec's prices (upstream-api.md), per image by resolution, per request or per second. */
const PER_IMAGE: Record<string, Record<string, string>> = {
  'seedream-4.0': { '1K': '0.040', '2K': '0.060', '4K': '0.070' },
  'nano-banana-pro': { '1K': '0.130', '2K': '0.170', '4K': '0.260' },
};
const SORA_PER_REQUEST: Record<number, string> = { 10: '0.480', 15: '0.720' };
const WAN_PER_SECOND: Record<string, string> = { '720p': '0.120', '1080p': '0.240' };

export interface Submission {
  model: 'seedream-4.0' | 'nano-banana-pro' | 'sora-2-pro' | 'wan2.7-video';
  resolution?: string;
  n?: number;
  duration?: number;
}

/**
 * What a submission costs, exactly (media routes are priced exactly at submission: §3), with the
 * price book in force now (`published`: seedream-4.0's per-image rates of a later version), under
 * the contract in force (contract-model.ts, decisions §19): one line, its rate as the contract sets it.
 */
export function priceOf(
  s: Submission,
  published: Record<string, string> = PER_IMAGE['seedream-4.0']!,
  contract: Contract = [],
): { unit: Unit; amount: Decimal } {
  const line = (component: string, list: string, quantity: number) => ({
    unit: 'USD' as const,
    amount: rateUnder(contract, subjectOf(s.model), component, null, new Decimal(list)).times(quantity),
  });
  if (s.model === 'sora-2-pro') return line(`request:${s.duration ?? 10}s`, SORA_PER_REQUEST[s.duration ?? 10]!, 1);
  if (s.model === 'wan2.7-video') {
    const resolution = s.resolution ?? '720p';
    return line(`video_seconds:${resolution}`, WAN_PER_SECOND[resolution]!, s.duration ?? 5);
  }
  const table = s.model === 'seedream-4.0' ? published : PER_IMAGE[s.model]!;
  const resolution = s.resolution ?? '1K';
  return line(`images:${resolution}`, table[resolution]!, s.model === 'nano-banana-pro' ? 1 : (s.n ?? 1));
}

/** A model as a contract's scopes see it (§19): its id, family and kind. */
export function subjectOf(model: string): { model: string; family: string; kind: string } {
  return { model, ...CATALOG[model]! };
}

/** seedream-4.0's per-image rates as the spec lists them (a publication replaces them). */
export const SEEDREAM_RATES: Readonly<Record<string, string>> = PER_IMAGE['seedream-4.0']!;

export type Scope = 'PROJECT' | 'USER' | 'TAG' | 'API_KEY' | 'EACH_USER';

/** The models the tester sends, with their family and kind and the unit they are priced in (upstream-api.md). */
export const CATALOG: Readonly<Record<string, { family: string; kind: string; unit: Unit }>> = {
  'seedream-4.0': { family: 'seedream', kind: 'image', unit: 'USD' },
  'nano-banana-pro': { family: 'nano-banana', kind: 'image', unit: 'USD' },
  'sora-2-pro': { family: 'sora', kind: 'video', unit: 'USD' },
  'wan2.7-video': { family: 'wan', kind: 'video', unit: 'USD' },
  'claude-sonnet-5': { family: 'claude', kind: 'chat', unit: 'CREDITS' },
  'gpt-5.6-luna': { family: 'gpt-5.6', kind: 'chat', unit: 'CREDITS' },
};

/** A budget on part of the catalog (§20): only tasks of this model, family or kind count. */
export interface Part {
  scope: 'MODEL' | 'FAMILY' | 'KIND';
  value: string;
}

/** The unit a part's models are priced in: a budget in the other unit is refused (§20). */
export function unitOfPart(part: Part): Unit {
  return CATALOG[Object.keys(CATALOG).find((m) => inPart(part, m))!]!.unit;
}

/** Whether a task of `model` is in `part` (a budget with no part counts every task). */
export function inPart(part: Part | null, model: string): boolean {
  if (!part) return true;
  const entry = CATALOG[model]!;
  return part.value === (part.scope === 'MODEL' ? model : part.scope === 'FAMILY' ? entry.family : entry.kind);
}
