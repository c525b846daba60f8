/**
 * A generated spend history for early warning's backtests (decisions §15), deterministic (a fixed seed):
 * 50 projects over 61 days from 2026-08-01, each with its own level, a working-hours day (busy
 * 08–18 UTC, quieter evenings, near idle at night), quiet weekends, ±20 % noise an hour and a slow
 * drift of up to ±20 % over the two months. Each project's spend is split over two API keys and
 * three end users. Written straight into spend_hourly, the roll-up forecasts and anomalies read.
 * `spikes` multiplies one scope's hour by five (and its project's, by the same amount).
 */
import type pg from 'pg';
import { prng } from '../../src/simulator/simulator.js';

export const HISTORY_START = Date.UTC(2026, 7, 1);
export const HISTORY_DAYS = 61;
export const PROJECTS = 50;
const HOUR = 3_600_000;
const KEY_SHARES = [0.7, 0.3];
const USER_SHARES = [0.5, 0.3, 0.2];

export interface Project {
  id: string;
  unit: 'USD' | 'CREDITS';
  keys: string[];
  users: string[];
}

export interface Spike {
  project: number;
  dimension: 'apiKey' | 'user';
  index: number;
  hour: number;
}

export function dayShape(hourOfDay: number): number {
  return hourOfDay >= 8 && hourOfDay < 18 ? 1 : hourOfDay >= 18 && hourOfDay < 23 ? 0.35 : 0.08;
}

/** The project's expected spend in an hour (no noise): level × day shape × weekday × drift. */
export function expected(level: number, drift: number, t: number): number {
  const d = new Date(t);
  const weekend = d.getUTCDay() === 0 || d.getUTCDay() === 6;
  const progress = (t - HISTORY_START) / (HISTORY_DAYS * 24 * HOUR);
  return level * dayShape(d.getUTCHours()) * (weekend ? 0.3 : 1) * (1 + drift * progress);
}

/** Writes the history; returns the projects and, per project, its spend per hour. */
export async function writeHistory(
  client: pg.ClientBase,
  projects: Project[],
  spikes: Spike[] = [],
  seed = 20261125,
): Promise<Map<string, Map<number, number>>> {
  const random = prng(seed);
  const byProject = new Map<string, Map<number, number>>();
  const cols: {
    hour: Date[];
    dimension: string[];
    project: string[];
    value: string[];
    unit: string[];
    amount: string[];
  } = { hour: [], dimension: [], project: [], value: [], unit: [], amount: [] };
  const push = (hour: number, dimension: string, p: Project, value: string, amount: number) => {
    cols.hour.push(new Date(hour));
    cols.dimension.push(dimension);
    cols.project.push(p.id);
    cols.value.push(value);
    cols.unit.push(p.unit);
    cols.amount.push(amount.toFixed(6));
  };
  const flush = async () => {
    await client.query(
      `INSERT INTO spend_hourly (hour, dimension, project_id, value, unit, amount, tasks)
       SELECT h, d, p, v, u::"Unit", a::numeric, 1 FROM unnest($1::timestamptz[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::text[]) x(h, d, p, v, u, a)`,
      [cols.hour, cols.dimension, cols.project, cols.value, cols.unit, cols.amount],
    );
    for (const k of Object.keys(cols) as Array<keyof typeof cols>) cols[k].length = 0;
  };
  for (const [i, p] of projects.entries()) {
    const level = (0.6 + random() * 4.4) * (p.unit === 'CREDITS' ? 1000 : 1);
    const drift = (random() - 0.5) * 0.4;
    const hours = new Map<number, number>();
    for (let h = 0; h < HISTORY_DAYS * 24; h++) {
      const t = HISTORY_START + h * HOUR;
      const base = expected(level, drift, t) * (0.8 + 0.4 * random());
      const keyAmounts = KEY_SHARES.map((s) => base * s);
      const userAmounts = USER_SHARES.map((s) => base * s);
      let project = base;
      for (const s of spikes.filter((x) => x.project === i && x.hour === h)) {
        const list = s.dimension === 'apiKey' ? keyAmounts : userAmounts;
        const extra = list[s.index]! * 4; // five times its hour
        list[s.index] = list[s.index]! + extra;
        project += extra;
      }
      push(t, 'project', p, '', project);
      keyAmounts.forEach((a, k) => push(t, 'apiKey', p, p.keys[k]!, a));
      userAmounts.forEach((a, u) => push(t, 'user', p, p.users[u]!, a));
      hours.set(t, project);
    }
    byProject.set(p.id, hours);
    if (cols.hour.length > 40_000) await flush();
  }
  await flush();
  return byProject;
}
