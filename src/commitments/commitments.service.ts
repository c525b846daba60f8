/**
 * Commitments (decisions §19): this module owns commitment and commitment_true_up. Their figures
 * come from the roll-ups (every project's posted spend of the unit, by month) less the true-ups
 * posted; a month's close posts its shortfalls (trueUp, called by the close in its transaction).
 */
import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { ApiError } from '../common/api-error.js';
import { monthOf, parseMonth } from '../common/month.js';
import { requireUuid } from '../common/ids.js';
import { DATABASE, type Database } from '../database/database.js';
import { boundedAmount } from '../pricing/bounds.js';
import { dec, ZERO, type Unit } from '../pricing/money.js';
import { commitmentMonths, inForceIn, type CommitmentMonth, type CommitmentTerms } from './commitment-math.js';

const MAX_MONTHS = 120;

export interface NewCommitment {
  name: string;
  projectId: string;
  unit: Unit;
  amount: string;
  startsMonth: string;
  endsMonth?: string | null;
  rollover?: boolean | null;
}

export interface Commitment extends CommitmentTerms {
  id: string;
  name: string;
  projectId: string;
  unit: Unit;
  createdAt: Date;
  createdBy: string;
}

interface Row {
  id: string;
  name: string;
  project_id: string;
  unit: Unit;
  amount: string;
  starts: string;
  ends: string | null;
  rollover: boolean;
  created_at: Date;
  created_by: string;
}

@Injectable()
export class CommitmentsService {
  constructor(@Inject(DATABASE) private readonly db: Pick<Database, 'query' | 'transaction'>) {}

  async create(c: NewCommitment, by: string): Promise<Commitment> {
    const starts = parseMonth('startsMonth', c.startsMonth).label;
    const ends = c.endsMonth ? parseMonth('endsMonth', c.endsMonth).label : null;
    if (ends && ends < starts) throw ApiError.badRequest('endsMonth: must not be before startsMonth');
    if (c.rollover && !ends) throw ApiError.badRequest('endsMonth: a commitment with rollover needs its last month');
    const amount = boundedAmount('amount', c.amount, { negative: false });
    if (amount.isZero()) throw ApiError.badRequest('amount: must be above zero');
    const name = c.name.trim();
    if (!name || name.length > 100) throw ApiError.badRequest('name: 1 to 100 characters');
    requireUuid('projectId', c.projectId);
    return this.db.transaction(async (client) => {
      // The close's lock, in a mode that lets settlements through: no close slips past these checks.
      await client.query('LOCK TABLE month_close IN SHARE ROW EXCLUSIVE MODE');
      await client.query('LOCK TABLE commitment IN SHARE ROW EXCLUSIVE MODE');
      const { rows } = await client.query<{ closed: string | null; project: boolean; overlap: string | null }>(
        `SELECT (SELECT to_char(max(month), 'YYYY-MM') FROM month_close WHERE reopened_at IS NULL) AS closed,
                EXISTS (SELECT 1 FROM project WHERE id = $1) AS project,
                (SELECT name FROM commitment WHERE unit = $2::"Unit" AND starts_month <= coalesce($4::date, 'infinity')
                   AND coalesce(ends_month, 'infinity') >= $3::date LIMIT 1) AS overlap`,
        [c.projectId, c.unit, `${starts}-01`, ends ? `${ends}-01` : null],
      );
      const r = rows[0]!;
      if (!r.project) throw ApiError.notFound(`projectId: no project ${c.projectId}`);
      // An open month may be covered after the fact (a contract signed mid-month); a closed one never.
      if (r.closed && starts <= r.closed)
        throw ApiError.conflict(
          `startsMonth: ${starts} is closed (through ${r.closed}); its statements stay as they are`,
        );
      if (r.overlap)
        throw ApiError.conflict(`a ${c.unit} commitment ("${r.overlap}") is in force in some of these months`);
      const id = randomUUID();
      await client.query(
        `INSERT INTO commitment (id, name, project_id, unit, amount, starts_month, ends_month, rollover, created_by)
         VALUES ($1, $2, $3, $4::"Unit", $5::numeric, $6::date, $7::date, $8, $9)`,
        [id, name, c.projectId, c.unit, amount.toFixed(), `${starts}-01`, ends ? `${ends}-01` : null, !!c.rollover, by],
      );
      return (await this.all(client, id))[0]!;
    });
  }

  async list(): Promise<Commitment[]> {
    return this.all(this.db);
  }

  /** A commitment's months through `through` (default: this month). */
  async months(c: Commitment, through?: string): Promise<CommitmentMonth[]> {
    const until = through ? parseMonth('through', through).label : monthOf(new Date()).label;
    const used = await this.usedByMonth(this.db, c.unit, c.startsMonth, until);
    return commitmentMonths(c, until, (m) => used.get(m) ?? ZERO).slice(-MAX_MONTHS);
  }

  /**
   * The close of `month` posts each commitment's shortfall as an adjustment on its project, dated
   * the month's last microsecond, and records it. A reopened month closed again posts what the
   * shortfall became since (up after a late credit, down after a late charge; nothing if it is the
   * same), so the month's true-ups add up to its shortfall as this close finds it and what is owed
   * is the commitment or the spend, whichever is more. Called inside the close's transaction, before
   * its statements are read. Answers what it posted.
   */
  async trueUp(month: string, db: Pick<Database, 'query'>): Promise<Array<{ commitment: string; amount: string }>> {
    const posted: Array<{ commitment: string; amount: string }> = [];
    for (const c of await this.all(db)) {
      if (!inForceIn(c, month)) continue;
      const { rows } = await db.query<{ before: string | null }>(
        'SELECT sum(amount)::text AS before FROM commitment_true_up WHERE commitment_id = $1 AND month = $2::date',
        [c.id, `${month}-01`],
      );
      const before = rows[0]!.before === null ? null : dec(rows[0]!.before);
      const used = await this.usedByMonth(db, c.unit, c.startsMonth, month);
      const figures = commitmentMonths(c, month, (m) => used.get(m) ?? ZERO).at(-1)!;
      const amount = figures.shortfall.minus(before ?? ZERO);
      if (amount.isZero()) continue;
      const reason =
        before === null
          ? `true-up of commitment "${c.name}" for ${month}`
          : `true-up of commitment "${c.name}" for ${month}, closed again: its shortfall is ${figures.shortfall.toFixed()} (${before.toFixed()} trued up before)`;
      await db.query(
        `WITH e AS (
           SELECT spendgate_adjust($2::uuid, $3::"Unit", $4::numeric, $5, NULL, ($6::date + interval '1 month') - interval '1 microsecond') AS id
         )
         INSERT INTO commitment_true_up (commitment_id, month, unit, amount, ledger_entry_id)
         SELECT $1, $6::date, $3::"Unit", $4::numeric, e.id FROM e`,
        [c.id, c.projectId, c.unit, amount.toFixed(), reason, `${month}-01`],
      );
      posted.push({ commitment: c.name, amount: amount.toFixed() });
    }
    return posted;
  }

  /** Posted spend of the unit by month over every project, less the true-ups posted in it. */
  private async usedByMonth(db: Pick<Database, 'query'>, unit: Unit, from: string, through: string) {
    const { rows } = await db.query<{ month: string; amount: string }>(
      `SELECT to_char(m, 'YYYY-MM') AS month,
              (coalesce((SELECT sum(s.amount) FROM spend_rollup_total s
                         WHERE s.unit = $1::"Unit" AND s.day >= m AND s.day < m + interval '1 month'), 0)
               - coalesce((SELECT sum(t.amount) FROM commitment_true_up t WHERE t.unit = $1::"Unit" AND t.month = m), 0))::text AS amount
       FROM generate_series($2::date, $3::date, interval '1 month') m`,
      [unit, `${from}-01`, `${through}-01`],
    );
    return new Map(rows.map((r) => [r.month, dec(r.amount)]));
  }

  private async all(db: Pick<Database, 'query'>, id?: string): Promise<Commitment[]> {
    const { rows } = await db.query<Row>(
      `SELECT id::text, name, project_id::text, unit, amount::text, to_char(starts_month, 'YYYY-MM') AS starts,
              to_char(ends_month, 'YYYY-MM') AS ends, rollover, created_at, created_by
       FROM commitment WHERE $1::uuid IS NULL OR id = $1 ORDER BY starts_month, name`,
      [id ?? null],
    );
    return rows.map((r) => ({
      id: r.id,
      name: r.name,
      projectId: r.project_id,
      unit: r.unit,
      amount: dec(r.amount),
      startsMonth: r.starts,
      endsMonth: r.ends,
      rollover: r.rollover,
      createdAt: r.created_at,
      createdBy: r.created_by,
    }));
  }
}
