/**
 * Vendor reconciliations (decisions §14): importing (statement-import.ts), reading a statement's
 * summary and differences, and deciding each difference. Accepting the vendor's figure posts an
 * adjustment of what remains between the task's net and that figure through the ledger's one
 * adjustment function (so a closed
 * month gets a prior-period item in the first open one), in the same transaction as the decision
 * and its audit record; disputing keeps a note. Billed rows with no task of ours and duplicates are
 * acknowledged, never money.
 */
import type { Readable } from 'node:stream';
import { Inject, Injectable } from '@nestjs/common';
import type { Actor } from '../auth/audit-sink.js';
import { ChangesService } from '../audit/changes.service.js';
import type { ClientInfo } from '../auth/sessions.service.js';
import { ApiError } from '../common/api-error.js';
import { bigintId } from '../common/ids.js';
import { cleanText } from '../common/text.js';
import { Database, DATABASE } from '../database/database.js';
import { dec } from '../pricing/money.js';
import { archivedMonthOf } from '../tasks/archived-tasks.js';
import type { ColumnMapping } from './statement-format.js';
import { importOnce, importStatement, type Imported } from './statement-import.js';
import { billedSince, lockImports, REASON, REVIEW_CLASSES } from './statement-match.js';

export const CLASSES = [
  'amount_differs',
  'billed_again',
  'billed_not_ours',
  'ours_not_billed',
  'duplicate',
  'pending',
] as const;

/** The classes whose acceptance moves money: the task's net becomes the vendor's figure (ours_not_billed: nothing). */
const MONEY_CLASSES = new Set(['amount_differs', 'billed_again', 'pending', 'ours_not_billed']);

export interface StatementRow {
  id: string;
  importedAt: Date;
  importedBy: string;
  rows: number;
  repeated: number;
  periodFrom: Date | null;
  periodTo: Date | null;
  summary: {
    classes: Array<{ class: string; unit: string; count: number; theirs: string; ours: string }>;
    byDayModel: Array<{ day: string; model: string; unit: string; theirs: string; ours: string; difference: string }>;
  };
}

export interface ItemRow {
  id: string;
  statementId: string;
  class: string;
  vendorTaskId: string | null;
  taskId: string | null;
  projectId: string | null;
  model: string | null;
  unit: 'USD' | 'CREDITS';
  ours: string | null;
  theirs: string | null;
  difference: string | null;
  state: string;
  note: string | null;
  resolvedBy: string | null;
  resolvedAt: Date | null;
}

const STATEMENTS = `SELECT id::text, imported_at AS "importedAt", imported_by AS "importedBy", rows, repeated, period_from AS "periodFrom", period_to AS "periodTo", summary FROM vendor_statement`;
const ITEMS = `SELECT i.id::text, i.statement_id::text AS "statementId", i.class, i.vendor_task_id::text AS "vendorTaskId", CASE WHEN i.task_id IS NOT NULL THEN 'gw-' || i.task_id END AS "taskId",
  i.project_id::text AS "projectId", i.model, i.unit::text AS unit, i.ours::text, i.theirs::text, i.difference::text, i.state, i.note, i.resolved_by AS "resolvedBy", i.resolved_at AS "resolvedAt"
  FROM vendor_recon_item i`;

@Injectable()
export class ReconciliationService {
  constructor(
    @Inject(DATABASE) private readonly db: Database,
    private readonly changes: ChangesService,
  ) {}

  /** One import at a time on this instance: a statement can be a million rows. */
  private importing: Promise<unknown> = Promise.resolve();

  async import(
    body: Readable,
    mapping: ColumnMapping[] | undefined,
    actor: Actor,
    client: ClientInfo,
    who: string,
  ): Promise<{ statement: StatementRow; created: boolean }> {
    const turn = this.importing.then(() => this.importNow(body, mapping, actor, client, who));
    this.importing = turn.catch(() => undefined);
    return turn;
  }

  private async importNow(
    body: Readable,
    mapping: ColumnMapping[] | undefined,
    actor: Actor,
    client: ClientInfo,
    who: string,
  ): Promise<{ statement: StatementRow; created: boolean }> {
    const done: Imported = await importOnce(
      (fn) =>
        this.changes.run(
          actor,
          client,
          (r: Imported) => ({ action: 'vendor-statement.import', targetKind: 'vendor-statement', targetId: r.id }),
          fn,
        ),
      () => importStatement(this.db, body, mapping, who),
    );
    return { statement: (await this.statement(done.id))!, created: done.created };
  }

  async statement(id: string): Promise<StatementRow | undefined> {
    return (await this.db.query<StatementRow>(`${STATEMENTS} WHERE id = $1`, [id])).rows[0];
  }

  async statements(first: number, after?: string): Promise<StatementRow[]> {
    return (
      await this.db.query<StatementRow>(
        `${STATEMENTS} WHERE ($1::timestamptz IS NULL OR imported_at < $1) ORDER BY imported_at DESC LIMIT $2`,
        [after ?? null, first],
      )
    ).rows;
  }

  async items(
    statementId: string,
    filter: { classes?: string[]; state?: string },
    first: number,
    after?: string,
  ): Promise<ItemRow[]> {
    const { rows } = await this.db.query<ItemRow>(
      `${ITEMS} WHERE i.statement_id = $1 AND ($2::text[] IS NULL OR i.class = ANY($2)) AND ($3::text IS NULL OR i.state = $3) AND ($4::bigint IS NULL OR i.id > $4)
       ORDER BY i.id LIMIT $5`,
      [statementId, filter.classes ?? null, filter.state ?? null, after ?? null, first],
    );
    return rows;
  }

  /** Undefined for an id that cannot be one of ours, before it reaches the query. */
  async item(id: string): Promise<ItemRow | undefined> {
    if (!bigintId(id)) return undefined;
    return (await this.db.query<ItemRow>(`${ITEMS} WHERE i.id = $1`, [id])).rows[0];
  }

  /**
   * Takes the vendor's figure: the task's net is brought to it, by an adjustment of what remains
   * between the net as it stands now (under the task's lock) and the vendor's figure, and nothing
   * when it is already there (decisions §14). A settled task under a `pending`
   * item is taken the same way. Billed rows with no task of ours and duplicates are acknowledged.
   */
  async accept(id: string, note: string | undefined, actor: Actor, client: ClientInfo, who: string): Promise<ItemRow> {
    const text = note === undefined ? null : cleanText('note', note, 500);
    return this.changes.run(
      actor,
      client,
      (after: ItemRow) => ({
        action: 'vendor-difference.accept',
        targetKind: 'vendor-difference',
        targetId: id,
        projectId: after.projectId,
        after,
      }),
      async () => {
        // Taking a charge back waits for any import: one that bills the task closes the item first.
        if ((await this.item(id))?.class === 'ours_not_billed') await lockImports(this.db);
        const item = await this.open(id);
        if (item.class === 'ours_not_billed') await this.refuseBilledSince(item);
        let entry: string | null = null;
        if (item.taskId && MONEY_CLASSES.has(item.class)) {
          const taskId = item.taskId.slice(3);
          await this.db.query('SELECT 1 FROM task WHERE id = $1 FOR UPDATE', [taskId]);
          // Read after the lock, in a statement of its own: its snapshot sees every movement committed before.
          const { rows } = await this.db.query<{ unit: string; settled: boolean; net: string }>(
            `SELECT t.unit::text, t.settled_at IS NOT NULL AS settled,
                  (coalesce(t.charge_amount, 0) + coalesce((SELECT sum(e.amount) FROM ledger_entry e WHERE e.task_id = t.id AND e.kind = 'adjustment'), 0))::text AS net
           FROM task t WHERE t.id = $1`,
            [taskId],
          );
          const task = rows[0];
          if (!task) {
            // An archive made before tasks awaiting a person were kept took it: its figure is in its month's files.
            const month = await archivedMonthOf(this.db, { internalId: taskId }, undefined);
            throw ApiError.conflict(
              month
                ? `its task ${item.taskId} was accepted in ${month}, which is archived: restore it (\`spendgate archive restore ${month}\`), decide, then archive it again`
                : `its task ${item.taskId} is not in the books`,
            );
          }
          if (!task.settled)
            throw ApiError.conflict(
              'its task is still held: it settles first (or is resolved in the review queue), then the statement can be taken',
            );
          if (task.unit !== item.unit)
            throw ApiError.conflict(
              'the vendor billed it in another unit: credits and USD cannot be adjusted into each other; settle it by hand',
            );
          const target = item.class === 'ours_not_billed' ? dec(0) : dec(item.theirs!);
          const delta = target.minus(dec(task.net));
          if (!delta.isZero()) {
            const posted = await this.db.query<{ id: string }>(
              `SELECT spendgate_adjust(t.project_id, t.unit, $2::numeric, $3, t.id, t.accepted_at)::text AS id FROM task t WHERE t.id = $1`,
              [
                taskId,
                delta.toFixed(),
                `vendor statement ${item.statementId}: the vendor's figure taken${text ? ` (${text})` : ''}`,
              ],
            );
            entry = posted.rows[0]!.id;
          }
        }
        await this.db.query(
          `UPDATE vendor_recon_item SET state = 'accepted', note = $2, resolved_by = $3, resolved_at = clock_timestamp(), entry_id = $4 WHERE id = $1`,
          [id, text, who, entry],
        );
        if (item.taskId) await this.clearReview(item.taskId.slice(3));
        return (await this.item(id))!;
      },
    );
  }

  async dispute(id: string, note: string, actor: Actor, client: ClientInfo, who: string): Promise<ItemRow> {
    const text = cleanText('note', note, 500);
    if (!text) throw ApiError.badRequest('note: say what is disputed');
    return this.changes.run(
      actor,
      client,
      (after: ItemRow) => ({
        action: 'vendor-difference.dispute',
        targetKind: 'vendor-difference',
        targetId: id,
        projectId: after.projectId,
        after,
      }),
      async () => {
        const item = await this.open(id);
        await this.db.query(
          `UPDATE vendor_recon_item SET state = 'disputed', note = $2, resolved_by = $3, resolved_at = clock_timestamp() WHERE id = $1`,
          [id, text, who],
        );
        if (item.taskId) await this.clearReview(item.taskId.slice(3));
        return (await this.item(id))!;
      },
    );
  }

  /**
   * An "ours, not billed" whose task a statement bills after all (left open before imports closed
   * such items): its charge was billed, so there is nothing to take back (closeBilledSince).
   */
  private async refuseBilledSince(item: ItemRow): Promise<void> {
    const since = await billedSince(this.db, item.vendorTaskId);
    if (since)
      throw ApiError.conflict(
        `statement ${since.statement} bills this task (${since.day}), where its figure is matched: there is no charge to take back; the next import closes this item`,
      );
  }

  private async open(id: string): Promise<ItemRow> {
    if (!bigintId(id)) throw ApiError.notFound(`difference ${id.slice(0, 30)} not found`);
    const { rows } = await this.db.query<{ state: string }>(
      'SELECT state FROM vendor_recon_item WHERE id = $1 FOR UPDATE',
      [id],
    );
    if (!rows[0]) throw ApiError.notFound(`difference ${id} not found`);
    if (rows[0].state !== 'open') throw ApiError.conflict(`difference ${id} was already ${rows[0].state}`);
    return (await this.item(id))!;
  }

  /**
   * A task the statement put under review leaves it once no open difference of a reviewing class
   * names it: an open "ours, not billed" never put it there, so it does not keep it there either.
   */
  private async clearReview(taskId: string): Promise<void> {
    await this.db.query(
      `UPDATE task SET needs_review = false, updated_at = clock_timestamp() WHERE id = $1 AND needs_review AND review_reason = $2
         AND NOT EXISTS (SELECT 1 FROM vendor_recon_item WHERE task_id = $1 AND state = 'open' AND class IN ${REVIEW_CLASSES})`,
      [taskId, REASON],
    );
  }
}
