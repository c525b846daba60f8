/**
 * adjustLedger: a correction posted to the ledger (decisions §4), of a project or of one of its
 * tasks. It lives with the tasks, not the ledger, because it looks the task up (its project, unit
 * and month), and the ledger stands below the tasks that settle into it.
 */
import { ChangesService } from '../audit/changes.service.js';
import { graphqlRefusal } from '../common/error.filter.js';
import { requireUuid } from '../common/ids.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { Args, Context, ID, Mutation, Resolver } from '@nestjs/graphql';
import { cleanText } from '../common/text.js';
import { dateWithin, LEDGER_EPOCH } from '../pricing/bounds.js';

/** A client's clock may run a little ahead of ours. */
const FUTURE_SKEW_MS = 60_000;
import { LedgerService } from '../ledger/ledger.service.js';
import { dec, Money } from '../pricing/money.js';
import { TaskReadsService } from './task-reads.service.js';
import { UnitEnum } from '../graphql/graphql.types.js';
import { DecimalValue, type DecimalText, DateTimeScalar } from '../graphql/scalars.js';

@Resolver()
export class AdjustmentsResolver {
  constructor(
    private readonly ledger: LedgerService,
    private readonly tasks: TaskReadsService,
    private readonly callers: Callers,
    private readonly changes: ChangesService,
  ) {}

  @Mutation(() => ID, {
    description:
      "posts a correction (a new ledger entry; nothing is edited): a negative amount is a refund. With taskId it counts in the period of that task's acceptance, else now.",
  })
  async adjustLedger(
    @Context() ctx: CallContext,
    @Args('projectId', { type: () => ID }) projectId: string,
    @Args('unit', { type: () => UnitEnum }) unit: UnitEnum,
    @Args('amount', { type: () => DecimalValue }) amountText: DecimalText,
    @Args('reason') reason: string,
    @Args('taskId', { type: () => ID, nullable: true }) taskId?: string,
    @Args('effectiveAt', { type: () => DateTimeScalar, nullable: true }) effectiveAt?: Date,
  ) {
    const who = await this.callers.of(ctx);
    requireUuid('projectId', projectId);
    if (!reason.trim()) throw graphqlRefusal('reason: an adjustment needs a reason', 'BAD_USER_INPUT');
    const why = cleanText('reason', reason, 1000, { multiline: true });
    const amount = dec(amountText);
    if (amount.isZero()) throw graphqlRefusal('amount: must not be zero', 'BAD_USER_INPUT');
    let internalTaskId: string | undefined;
    // Within the ledger's epoch and never in the future (a correction of what happened).
    // and never before the gateway's first month of activity (decisions §16: a 1970 entry would stand before every
    // close).
    let at = effectiveAt
      ? dateWithin('effectiveAt', effectiveAt, LEDGER_EPOCH, new Date(Date.now() + FUTURE_SKEW_MS))
      : undefined;
    if (at) {
      const first = await this.ledger.firstMonthOfActivity();
      if (at < first)
        throw graphqlRefusal(
          `effectiveAt: ${at.toISOString()} is before the gateway's first month of activity (${first.toISOString().slice(0, 7)}): a correction is dated within the books`,
          'BAD_USER_INPUT',
        );
    }
    if (taskId) {
      const task = await this.tasks.find(taskId);
      if (!task) await this.tasks.refuseIfArchived(taskId, [projectId]);
      if (!task || task.projectId !== projectId)
        throw graphqlRefusal(`taskId: task ${taskId} is not a task of project ${projectId}`, 'BAD_USER_INPUT');
      if (task.unit !== unit)
        throw graphqlRefusal(
          `unit: task ${taskId} is priced in ${task.unit}; credits and USD never mix`,
          'BAD_USER_INPUT',
        );
      internalTaskId = task.internalId;
      at ??= task.acceptedAt;
    }
    const money = Money.of(unit, amount);
    return this.changes.run(
      who,
      ctx.client,
      (entryId: string) => ({
        action: 'ledger.adjust',
        targetKind: 'ledger-entry',
        targetId: entryId,
        projectId,
        after: { unit, amount: money.toFixed(), reason: why, taskId: taskId ?? null, effectiveAt: at ?? null },
      }),
      () => this.ledger.adjust(projectId, money, why, internalTaskId, at),
    );
  }
}
