/**
 * The books' days, months and hours are UTC (decisions §4, §13), whatever the database server's
 * `TimeZone` and the gateway process's `TZ`. Two places would otherwise read them in local time:
 *
 * - PostgreSQL: `date_trunc('day', t)`, `t::date` and `to_char(t, …)` of a timestamptz use the
 *   session's TimeZone, which a server takes from its machine at initdb (Debian: the host's zone).
 *   Most SQL here says `AT TIME ZONE 'UTC'`; every session is pinned too, so none can drift (a
 *   statement's days, the hourly roll-up). DateStyle is pinned to ISO, the text node-postgres reads.
 * - node-postgres: it reads a `date` (and a `timestamp` without zone) as local midnight (local
 *   time), and writes a JS Date as local time with its offset. In a process east of UTC a day read
 *   back came out as the day before (`toISOString()`); west of UTC a Date sent as `$1::date` became
 *   the day before. Both are read and written as UTC here, for every pool and client in the process.
 */
import pg from 'pg';

/** The session settings every connection starts with (pg's `options`, PostgreSQL's `-c`). */
export const UTC_SESSION = ['-c TimeZone=UTC', '-c DateStyle=ISO,YMD'];

const TIMESTAMPTZ = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ) as (text: string) => Date | number;
const infinite = (text: string) => (text.startsWith('-') ? -Infinity : Infinity);

/** `date` and `timestamp` read as UTC: the same instant whatever the process's TZ. */
pg.types.setTypeParser(pg.types.builtins.DATE, (text: string) =>
  text.endsWith('infinity') ? infinite(text) : TIMESTAMPTZ(`${text} 00:00:00+00`),
);
pg.types.setTypeParser(pg.types.builtins.TIMESTAMP, (text: string) =>
  text.endsWith('infinity') ? infinite(text) : TIMESTAMPTZ(`${text}+00`),
);
/** A JS Date sent as a parameter is written in UTC (`…+00:00`), so `$1::date` is its UTC day. */
pg.defaults.parseInputDatesAsUTC = true;
