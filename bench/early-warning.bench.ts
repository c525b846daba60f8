/**
 * `npm run bench:early-warning`: one hour's anomaly evaluation (decisions §15) over 100,000 end
 * users of 50 projects, from spend_hourly with the hour and its 14-day baseline in place (1.5M
 * rows). Two hours are timed: a typical one (2 % of users over the USD 1 floor, spending as
 * usual, a dozen spiking) and a worst case (every user over the floor and at twice yesterday's
 * spend, so every one gets the full baseline). Prints ms per hour; writes
 * bench/results/early-warning.json; asserts nothing.
 */
import { Database } from '../src/database/database.js';
import { anomaliesOf } from '../src/early-warning/anomalies.js';
import { machine, publish, withScratchPostgres } from './support.js';

const USERS = 100_000;
const DAY = 86_400_000;
const SETTINGS = { multiple: 3, floorUsd: '1', floorCredits: '1000' };

await withScratchPostgres('early-warning', [], async (server) => {
  const db = new Database(server.url, 2);
  await db.query(`INSERT INTO project (id, name) SELECT gen_random_uuid(), 'p' || g FROM generate_series(1, 50) g`);
  const typical = new Date(Date.UTC(2026, 9, 20, 14));
  const worst = new Date(Date.UTC(2026, 9, 20, 15));
  // Baselines: 14 days at each of the two hours; user u of project u % 50; 2 % of users spend $2–3 an hour, the rest
  // cents.
  for (const hour of [typical, worst]) {
    for (let d = 1; d <= 14; d++) {
      await db.query(
        `INSERT INTO spend_hourly (hour, dimension, project_id, value, unit, amount, tasks)
         SELECT $1::timestamptz, 'user', p.id, 'user-' || g, 'USD', CASE WHEN g % 50 = 0 THEN 2 + (g % 7) / 7.0 ELSE 0.05 END, 1
         FROM generate_series(1, $2) g JOIN (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM project) p ON p.n = g % 50`,
        [new Date(hour.getTime() - d * DAY), USERS],
      );
    }
  }
  // The typical hour: as usual, a dozen of the big ones at five times; the worst: everyone at $2 and over.
  await db.query(
    `INSERT INTO spend_hourly (hour, dimension, project_id, value, unit, amount, tasks)
     SELECT $1::timestamptz, 'user', p.id, 'user-' || g, 'USD', CASE WHEN g % 50 = 0 THEN (2 + (g % 7) / 7.0) * CASE WHEN g % 8000 = 0 THEN 5 ELSE 1 END ELSE 0.05 END, 1
     FROM generate_series(1, $2) g JOIN (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM project) p ON p.n = g % 50`,
    [typical, USERS],
  );
  await db.query(
    `INSERT INTO spend_hourly (hour, dimension, project_id, value, unit, amount, tasks)
     SELECT $1::timestamptz, 'user', p.id, 'user-' || g, 'USD', CASE WHEN g % 50 = 0 THEN 6 ELSE 2 END, 1
     FROM generate_series(1, $2) g JOIN (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM project) p ON p.n = g % 50`,
    [worst, USERS],
  );
  await db.query('ANALYZE spend_hourly');
  const time = async (hour: Date) => {
    const runs: number[] = [];
    let found = 0;
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      found = (await anomaliesOf(db, hour, SETTINGS)).length;
      runs.push(performance.now() - started);
    }
    runs.sort((a, b) => a - b);
    return { p50Ms: Math.round(runs[2]!), minMs: Math.round(runs[0]!), anomalies: found };
  };
  const out = {
    machine: `${machine()}, PostgreSQL embedded, defaults`,
    date: new Date().toISOString().slice(0, 10),
    users: USERS,
    rows: Number((await db.query<{ n: string }>('SELECT count(*)::text AS n FROM spend_hourly')).rows[0]!.n),
    typicalHour: await time(typical),
    worstHour: await time(worst),
  };
  console.log(
    `anomaly evaluation over ${USERS.toLocaleString('en')} users: typical hour ${out.typicalHour.p50Ms} ms (${out.typicalHour.anomalies} anomalies), worst case ${out.worstHour.p50Ms} ms`,
  );
  publish('early-warning', out);
  await db.close();
});
