/** closeMonth, reopenMonth, closedMonths and statement (decisions §13); rights from permissions.ts. */
import { Args, Context, Field, ID, Int, Mutation, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { actorOf, scopeProjects } from '../auth/access.js';
import { requireUuid } from '../common/ids.js';
import { MoneyAmount, UnitEnum } from '../graphql/graphql.types.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { DecimalValue, DateTimeScalar } from '../graphql/scalars.js';
import { MonthCloseService } from './month-close.service.js';
import { parseMonth } from '../common/month.js';
import type { StatementData } from './statement-data.js';
import { StatementsService } from './statements.service.js';

@ObjectType({ description: 'a close of a UTC month; a reopened close stays listed with its reopening' })
export class MonthClose {
  @Field({ description: 'YYYY-MM' }) month!: string;
  @Field(() => DateTimeScalar) closedAt!: Date;
  @Field() closedBy!: string;
  @Field(() => Int, { description: 'tasks still held at close, carried to the next month' }) carriedTasks!: number;
  @Field(() => Int, { description: 'statements made at this close (one per project with activity)' })
  statements!: number;
  @Field(() => DateTimeScalar, { nullable: true }) reopenedAt!: Date | null;
  @Field(() => String, { nullable: true }) reopenedBy!: string | null;
  @Field(() => String, { nullable: true }) reopenReason!: string | null;
  @Field(() => Int, { description: "1 for the month's first close; 2 for its close after a reopening, and so on" })
  version!: number;
  @Field({ description: 'true for the close in force; false once it was reopened (its statements are kept)' })
  inForce!: boolean;
}

@ObjectType({
  description:
    'a line of a statement: section (total, model, api key, adjustment, prior-period item, open at close), what, detail, amount',
})
export class StatementLine {
  @Field() section!: string;
  @Field() item!: string;
  @Field(() => String, { nullable: true }) detail!: string | null;
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field(() => DecimalValue) amount!: string;
  @Field(() => Int, { nullable: true }) tasks!: number | null;
}

@ObjectType({ description: "a project's statement of a closed month, as made at close and kept" })
export class Statement {
  @Field(() => ID) projectId!: string;
  @Field() projectName!: string;
  @Field() month!: string;
  @Field(() => Int, { description: '1 for the first close; more after reopenings (the earlier versions are kept)' })
  version!: number;
  @Field(() => DateTimeScalar) closedAt!: Date;
  @Field() closedBy!: string;
  @Field({ description: 'SHA-256 (hex) over the digests of the ledger entries it covers' }) ledgerDigest!: string;
  @Field(() => Int) entries!: number;
  @Field(() => [MoneyAmount], { description: 'spend per unit: credits and USD never summed' }) totals!: MoneyAmount[];
  @Field(() => [StatementLine]) lines!: StatementLine[];
  @Field({ description: 'GET this path (same credentials) for the CSV; .pdf for the PDF' }) csvPath!: string;
  @Field() pdfPath!: string;
  @Field(() => [Int], { description: 'versions kept from earlier closes of this month' }) earlierVersions!: number[];
}

@Resolver()
export class ClosingResolver {
  constructor(
    private readonly closes: MonthCloseService,
    private readonly kept: StatementsService,
    private readonly callers: Callers,
  ) {}

  @Mutation(() => MonthClose, {
    description:
      'closes a UTC month that is over ("2026-10"): its figures never change after; later movements are prior-period items of the next open month',
  })
  async closeMonth(@Context() ctx: CallContext, @Args('month') month: string) {
    const who = await this.callers.of(ctx);
    return this.closes.close(month, who, ctx.client, actorOf(who).label);
  }

  @Mutation(() => Boolean, {
    description:
      'reopens the latest closed month (owners), with a reason; its statements are kept beside the next ones',
  })
  async reopenMonth(@Context() ctx: CallContext, @Args('month') month: string, @Args('reason') reason: string) {
    const who = await this.callers.of(ctx);
    return this.closes.reopen(month, reason, who, ctx.client, actorOf(who).label);
  }

  @Query(() => [MonthClose], { description: 'every close, newest month first' })
  async closedMonths(@Context() ctx: CallContext) {
    await this.callers.of(ctx);
    return this.closes.list();
  }

  @Query(() => String, {
    nullable: true,
    description:
      'the month a close may take next (YYYY-MM): months close in order, from the first with ledger entries; null when none is over',
  })
  async monthToClose(@Context() ctx: CallContext) {
    await this.callers.of(ctx);
    return this.closes.nextToClose();
  }

  @Query(() => Statement, {
    nullable: true,
    description: "a project's statement of a closed month (null while the month is open)",
  })
  async statement(@Args('projectId', { type: () => ID }) projectId: string, @Args('month') month: string) {
    requireUuid('projectId', projectId);
    const m = parseMonth('month', month);
    const versions = await this.kept.versions(projectId, m);
    const current = versions.find((v) => v.current);
    return current
      ? toStatement(
          current.data,
          versions.filter((v) => !v.current).map((v) => v.data.version),
        )
      : null;
  }

  @Query(() => [Statement], {
    description: "a closed month's statements of the projects the caller may read (none while it is open)",
  })
  async statements(@Context() ctx: CallContext, @Args('month') month: string) {
    const who = await this.callers.of(ctx);
    return (await this.kept.forMonth(parseMonth('month', month), scopeProjects(who, undefined))).map((s) =>
      toStatement(s, []),
    );
  }
}

function toStatement(s: StatementData, earlier: number[]): Statement {
  const line = (
    section: string,
    item: string,
    detail: string | null,
    unit: string,
    amount: string,
    tasks: number | null,
  ): StatementLine => ({ section, item, detail, unit: unit as UnitEnum, amount, tasks });
  const path = `/reports/statements/${s.project.id}/${s.month}`;
  return {
    projectId: s.project.id,
    projectName: s.project.name,
    month: s.month,
    version: s.version,
    closedAt: new Date(s.closedAt),
    closedBy: s.closedBy,
    ledgerDigest: s.ledgerDigest,
    entries: s.entries,
    totals: s.totals.map((t) => ({ unit: t.unit as UnitEnum, amount: t.amount })),
    lines: [
      ...s.byModel.map((m) => line('model', m.model, m.kind, m.unit, m.amount, m.tasks)),
      ...s.byKey.map((k) => line('api key', k.key, k.name, k.unit, k.amount, k.tasks)),
      ...s.adjustments.map((a) => line('adjustment', `entry ${a.entryId}`, a.reason, a.unit, a.amount, null)),
      ...s.priorPeriod.map((p) =>
        line(
          'prior-period item',
          p.taskId ? `task ${p.taskId}` : `entry ${p.entryId}`,
          `${p.kind} of ${p.belongsTo}`,
          p.unit,
          p.amount,
          null,
        ),
      ),
      ...s.openItems.map((o) =>
        line('open at close', `task ${o.taskId}`, `${o.model}, accepted ${o.acceptedAt}`, o.unit, o.hold, null),
      ),
    ],
    csvPath: `${path}.csv`,
    pdfPath: `${path}.pdf`,
    earlierVersions: earlier,
  };
}
