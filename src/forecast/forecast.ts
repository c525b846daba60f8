/**
 * Forecasting a budget's spend (decisions §15), plain TypeScript. Spend has a weekly rhythm
 * (working hours, weekends), so the remaining hours of a period are projected from the same hours
 * of the week in the recent past, scaled by the current level:
 *
 *   profile[slot] = mean spend in that hour of the week over the history (up to 4 weeks);
 *   level         = spend of the last 7 days / the profile's sum over the same 168 slots;
 *   forecast      = spent + held now + level × Σ profile[slot] over the period's remaining hours.
 *
 * With less than 7 days of history the profile cannot see a week, so the rate of the period so far
 * is extended linearly once a day has passed; before that there is too little to say (null).
 * `runsOutAt` walks the same projection hour by hour and answers the first hour the limit is
 * reached (now, when it is already), or null when it is not reached by the period's end.
 * Amounts are decimal.js throughout; hours are indexes, never float money.
 */
import { dec, ZERO, type Decimal } from '../pricing/money.js';

const HOUR = 3_600_000;
const WEEK_HOURS = 168;
/** How much history the profile uses. */
export const PROFILE_WEEKS = 4;
/** Below this much history (or period elapsed, for the linear fallback), no forecast. */
export const MIN_HISTORY_HOURS = 24;

export interface ForecastInput {
  /** Spend per UTC hour (start of hour → amount), oldest to newest, up to `now`. */
  hourly: ReadonlyMap<number, Decimal>;
  /** The first hour with any recorded spend of this scope (how much history there is). */
  firstHour: number | null;
  periodStart: Date;
  /** null: a lifetime budget (no end). */
  periodEnd: Date | null;
  spent: Decimal;
  held: Decimal;
  limit: Decimal;
  now: Date;
  /** No history for this scope (an end user's cap on part of the catalog): only the period's own rate. */
  linearOnly?: boolean;
}

export interface Forecast {
  /** Spend expected at the period's end (null for a lifetime budget). */
  forecastSpend: Decimal | null;
  /** When spent + held reaches the limit at this rate; null if not within the period (or 90 days). */
  runsOutAt: Date | null;
  method: 'weekly-profile' | 'linear';
}

const hourOf = (t: number) => Math.floor(t / HOUR) * HOUR;
/** Hour of the week, Monday 00:00 UTC = 0. */
const slotOf = (t: number) => (Math.floor(t / HOUR) + 72) % WEEK_HOURS; // 1970-01-01 was a Thursday

export function forecast(input: ForecastInput): Forecast | null {
  const now = input.now.getTime();
  const current = hourOf(now);
  const end = input.periodEnd ? input.periodEnd.getTime() : now + 90 * 24 * HOUR;
  const history = input.firstHour === null ? 0 : (current - input.firstHour) / HOUR;
  const usedNow = input.spent.plus(input.held);
  // The hours still to come: from the next full hour to the end of the period.
  const remaining: number[] = [];
  for (let h = current + HOUR; h < end; h += HOUR) remaining.push(h);

  let perHour: (h: number) => Decimal;
  let method: Forecast['method'];
  if (history >= WEEK_HOURS && !input.linearOnly) {
    const from = current - Math.min(history, PROFILE_WEEKS * WEEK_HOURS) * HOUR;
    const sums = new Array<Decimal>(WEEK_HOURS).fill(ZERO);
    const counts = new Array<number>(WEEK_HOURS).fill(0);
    for (let h = from; h < current; h += HOUR) {
      const slot = slotOf(h);
      sums[slot] = sums[slot]!.plus(input.hourly.get(h) ?? ZERO);
      counts[slot] = counts[slot]! + 1;
    }
    const profile = sums.map((s, i) => (counts[i] ? s.div(counts[i]!) : ZERO));
    let lastWeek = ZERO;
    let expected = ZERO;
    for (let h = current - WEEK_HOURS * HOUR; h < current; h += HOUR) {
      lastWeek = lastWeek.plus(input.hourly.get(h) ?? ZERO);
      expected = expected.plus(profile[slotOf(h)]!);
    }
    const level = expected.isZero() ? dec(1) : lastWeek.div(expected);
    perHour = (h) => profile[slotOf(h)]!.times(level);
    method = 'weekly-profile';
  } else {
    const elapsed = (current - input.periodStart.getTime()) / HOUR;
    if ((!input.linearOnly && history < MIN_HISTORY_HOURS) || elapsed < MIN_HISTORY_HOURS) return null;
    const rate = input.spent.div(elapsed);
    perHour = () => rate;
    method = 'linear';
  }

  let total = usedNow;
  let runsOutAt: Date | null = usedNow.gte(input.limit) ? input.now : null;
  for (const h of remaining) {
    total = total.plus(perHour(h));
    if (runsOutAt === null && total.gte(input.limit)) runsOutAt = new Date(h + HOUR);
  }
  return { forecastSpend: input.periodEnd ? total : null, runsOutAt, method };
}
