/**
 * Early warning in the background (decisions §15), every EARLY_WARNING_MS on every instance, on
 * its own connection at low CPU priority (never the submission path's): the hours since the last
 * evaluated one are checked for anomalies (each hour once, ANOMALY_GRACE_MS after it ends so its
 * tasks have settled), budgets' forecasts are checked against their limits, and last week's digest
 * is written once. Every event goes through the outbox: once per cause, whichever instance writes it.
 */
import type { Database } from '../database/database.js';
import type { Config } from '../config/config.js';
import { evaluateHour, type AnomalySettings } from './anomalies.js';
import { weeklyDigest } from './digest.js';
import { forecastAlerts } from './forecast-alerts.js';

const HOUR = 3_600_000;
/** After a pause, at most this many past hours are evaluated (older spikes are history, not news). */
const CATCH_UP_HOURS = 6;

export type EarlyWarningSettings = Pick<
  Config,
  'ANOMALY_MULTIPLE' | 'ANOMALY_FLOOR_USD' | 'ANOMALY_FLOOR_CREDITS' | 'ANOMALY_GRACE_MS'
>;

export class EarlyWarning {
  constructor(
    private readonly db: Database,
    private readonly settings: EarlyWarningSettings,
  ) {}

  get anomalySettings(): AnomalySettings {
    return {
      multiple: this.settings.ANOMALY_MULTIPLE,
      floorUsd: this.settings.ANOMALY_FLOOR_USD,
      floorCredits: this.settings.ANOMALY_FLOOR_CREDITS,
    };
  }

  async round(
    now: Date = new Date(),
  ): Promise<{ hours: number; anomalies: number; forecasts: number; digest: boolean }> {
    let hours = 0;
    let anomalies = 0;
    // The last hour that has ended at least the grace ago, and the ones before it not yet evaluated.
    const last = Math.floor((now.getTime() - this.settings.ANOMALY_GRACE_MS) / HOUR) * HOUR - HOUR;
    for (let h = last - (CATCH_UP_HOURS - 1) * HOUR; h <= last; h += HOUR) {
      const done = await evaluateHour(this.db, new Date(h), this.anomalySettings);
      if (done) {
        hours += 1;
        anomalies += done.anomalies.length;
      }
    }
    const forecasts = await forecastAlerts(this.db, now);
    const digest = await weeklyDigest(this.db, now);
    return { hours, anomalies, forecasts, digest };
  }
}
