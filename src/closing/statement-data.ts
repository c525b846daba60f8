/**
 * A project's statement of a month (decisions §13), as data: what the month's roll-ups and ledger
 * say at close. Totals, per model and kind, and per API key come from the same roll-ups as the
 * spend report (so they agree to the last digit); adjustments and prior-period items from the
 * ledger; open items are the holds the close carried forward (an accrual, not in the totals).
 * Every amount is the database's exact text, per unit: credits and USD are never added together.
 */
import { Decimal, type AmountText, type Unit } from '../pricing/money.js';
import { MODEL_ROUTES } from '../catalog/catalog.js';
import type { Database } from '../database/database.js';
import { ENTRY_COLUMNS, ledgerDigester, type EntryRow } from '../ledger/ledger-seal.js';
import type { Month } from '../common/month.js';

export interface OpenItem {
  taskId: string;
  model: string;
  unit: Unit;
  hold: string;
  acceptedAt: string;
}

export interface StatementData {
  project: { id: string; name: string };
  month: string;
  closedAt: string;
  closedBy: string;
  /** 1 for the first close of the month; a close after a reopening is 2, and so on. */
  version: number;
  ledgerDigest: string;
  entries: number;
  /**
   * The ledger's newest seal when the month was closed (seq and hash): an anchor kept outside the database with the
   * statement.
   */
  ledgerHead?: { seq: string; hash: string } | null;
  totals: Array<AmountText & { tasks: number }>;
  /** `listAmount`: what the month's tasks of the model cost at list prices, when a contract made it differ (§19). */
  byModel: Array<AmountText & { model: string; kind: string; tasks: number; listAmount?: string }>;
  byKey: Array<AmountText & { key: string; name: string | null; tasks: number }>;
  adjustments: Array<{
    entryId: string;
    at: string;
    unit: Unit;
    amount: string;
    reason: string;
    taskId: string | null;
  }>;
  priorPeriod: Array<{
    entryId: string;
    kind: string;
    taskId: string | null;
    belongsTo: string;
    unit: Unit;
    amount: string;
    reason: string | null;
  }>;
  openItems: OpenItem[];
}

const KIND = new Map(MODEL_ROUTES.map((r) => [r.id, r.kind]));
type Db = Pick<Database, 'query' | 'eachPage'>;

/** SHA-256 over the digests of a project's ledger entries of the month, in id order, and how many. */
export function monthDigest(db: Pick<Database, 'eachPage'>, projectId: string, month: Month) {
  return entriesDigest(db, 'ledger_entry', projectId, month);
}

/**
 * The same digest over `entries` (the ledger, or a union with archived months' entries), read a
 * page at a time: a month of millions of entries in bounded memory (Database.eachPage).
 */
export async function entriesDigest(
  db: Pick<Database, 'eachPage'>,
  entries: string,
  projectId: string,
  month: Month,
): Promise<{ digest: Buffer; entries: number }> {
  const digester = ledgerDigester();
  const count = await db.eachPage(
    `SELECT ${ENTRY_COLUMNS} FROM ${entries} e WHERE e.project_id = $1 AND e.effective_at >= $2 AND e.effective_at < $3 ORDER BY e.id`,
    [projectId, month.start, month.end],
    (rows) => digester.add(rows as EntryRow[]),
  );
  return { digest: digester.digest(), entries: count };
}

export async function statementData(
  db: Db,
  projectId: string,
  month: Month,
  close: { closedAt: Date; closedBy: string; version: number; ledgerHead?: { seq: string; hash: string } | null },
  openItems: OpenItem[],
): Promise<StatementData> {
  const days = [month.day, month.end.toISOString().slice(0, 10)];
  // One after another: inside the close's transaction they share one connection.
  const project = await db.query<{ name: string }>('SELECT name FROM project WHERE id = $1', [projectId]);
  // Summed by the database, as the spend report sums them: the same exact text.
  const totals = await db.query<AmountText & { tasks: number }>(
    `SELECT unit::text, sum(amount)::text AS amount, sum(tasks)::int AS tasks FROM spend_rollup
     WHERE project_id = $1 AND day >= $2 AND day < $3 GROUP BY unit ORDER BY unit`,
    [projectId, ...days],
  );
  const byModel = await db.query<AmountText & { model: string; tasks: number }>(
    `SELECT model, unit::text, sum(amount)::text AS amount, sum(tasks)::int AS tasks FROM spend_rollup
     WHERE project_id = $1 AND day >= $2 AND day < $3 GROUP BY model, unit ORDER BY model COLLATE "C", unit`,
    [projectId, ...days],
  );
  // List beside contracted (decisions §19): the roll-up by key keeps list minus contracted.
  const list = await db.query<{ model: string; unit: Unit; discount: string }>(
    `SELECT model, unit::text, sum(contract_discount)::text AS discount FROM spend_rollup_by
     WHERE dimension = 'apiKey' AND project_id = $1 AND period >= $2 AND period < $3
     GROUP BY model, unit HAVING sum(contract_discount) <> 0`,
    [projectId, ...days],
  );
  const discounts = new Map(list.rows.map((r) => [`${r.model}|${r.unit}`, r.discount]));
  const byKey = await db.query<AmountText & { key: string; name: string | null; tasks: number }>(
    `SELECT s.value AS key, k.name, s.unit::text, sum(s.amount)::text AS amount, sum(s.tasks)::int AS tasks
     FROM spend_rollup_by s LEFT JOIN api_key k ON k.prefix = s.value
     WHERE s.dimension = 'apiKey' AND s.project_id = $1 AND s.period >= $2 AND s.period < $3
     GROUP BY s.value, k.name, s.unit ORDER BY s.value COLLATE "C", s.unit`,
    [projectId, ...days],
  );
  const entries = await db.query<{
    id: string;
    kind: string;
    task_id: string | null;
    belongs_to: string | null;
    unit: Unit;
    amount: string;
    at: Date;
    reason: string | null;
  }>(
    `SELECT id::text, kind::text, 'gw-' || task_id AS task_id, belongs_to::text, unit::text, amount::text, effective_at AS at, reason FROM ledger_entry
     WHERE project_id = $1 AND effective_at >= $2 AND effective_at < $3 AND (kind = 'adjustment' OR belongs_to IS NOT NULL) AND kind <> 'release'
     ORDER BY id`,
    [projectId, month.start, month.end],
  );
  const ledger = await monthDigest(db, projectId, month);
  return {
    project: { id: projectId, name: project.rows[0]?.name ?? projectId },
    month: month.label,
    closedAt: close.closedAt.toISOString(),
    closedBy: close.closedBy,
    version: close.version,
    ledgerDigest: ledger.digest.toString('hex'),
    entries: ledger.entries,
    ...(close.ledgerHead !== undefined ? { ledgerHead: close.ledgerHead } : {}),
    totals: totals.rows,
    byModel: byModel.rows.map((r) => {
      const discount = discounts.get(`${r.model}|${r.unit}`);
      return {
        ...r,
        kind: KIND.get(r.model) ?? '-',
        ...(discount ? { listAmount: new Decimal(r.amount).plus(discount).toFixed() } : {}),
      };
    }),
    byKey: byKey.rows.map((r) => ({ ...r, key: r.key === '' ? '(none)' : r.key })),
    adjustments: entries.rows
      .filter((e) => e.kind === 'adjustment' && e.belongs_to === null)
      .map((e) => ({
        entryId: e.id,
        at: e.at.toISOString(),
        unit: e.unit,
        amount: e.amount,
        reason: e.reason ?? '',
        taskId: e.task_id,
      })),
    priorPeriod: entries.rows
      .filter((e) => e.belongs_to !== null)
      .map((e) => ({
        entryId: e.id,
        kind: e.kind,
        taskId: e.task_id,
        belongsTo: e.belongs_to!.slice(0, 7),
        unit: e.unit,
        amount: e.amount,
        reason: e.reason,
      })),
    openItems,
  };
}
