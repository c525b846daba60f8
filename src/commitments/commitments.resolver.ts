/**
 * Commitments over GraphQL (decisions §19): finance enters one (audited); readers see each month's
 * committed, used, remaining, overage and shortfall. The close trues up (month-close.service.ts).
 */
import { Args, Context, Field, ID, Mutation, ObjectType, Parent, Query, ResolveField, Resolver } from '@nestjs/graphql';
import { ChangesService } from '../audit/changes.service.js';
import { actorOf } from '../auth/access.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { UnitEnum } from '../graphql/graphql.types.js';
import { DateTimeScalar, DecimalValue } from '../graphql/scalars.js';
import type { Decimal } from '../pricing/money.js';
import { CommitmentsService, type Commitment } from './commitments.service.js';

@ObjectType({ description: 'a month of a commitment: every figure exact, in its unit' })
export class CommitmentMonthView {
  @Field() month!: string;
  @Field(() => DecimalValue, { description: 'the amount, plus what a rollover carried in' }) committed!: Decimal;
  @Field(() => DecimalValue) carriedIn!: Decimal;
  @Field(() => DecimalValue, { description: 'every project’s spend posted in the month, true-ups excluded' })
  used!: Decimal;
  @Field(() => DecimalValue) remaining!: Decimal;
  @Field(() => DecimalValue, { description: 'spend above the commitment' }) overage!: Decimal;
  @Field(() => DecimalValue, { description: 'what the month’s close trues up (posted once it is closed)' })
  shortfall!: Decimal;
}

@ObjectType({ description: 'a committed spend per month with the vendor (decisions §19)' })
export class CommitmentView {
  @Field(() => ID) id!: string;
  @Field() name!: string;
  @Field(() => ID, { description: 'the project that carries the true-ups' }) projectId!: string;
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field(() => DecimalValue, { description: 'per month' }) amount!: Decimal;
  @Field() startsMonth!: string;
  @Field(() => String, { nullable: true }) endsMonth!: string | null;
  @Field() rollover!: boolean;
  @Field(() => DateTimeScalar) createdAt!: Date;
  @Field() createdBy!: string;
}

@Resolver(() => CommitmentView)
export class CommitmentsResolver {
  constructor(
    private readonly service: CommitmentsService,
    private readonly callers: Callers,
    private readonly changes: ChangesService,
  ) {}

  @Query(() => [CommitmentView])
  async commitments(@Context() ctx: CallContext) {
    await this.callers.of(ctx);
    return this.service.list();
  }

  @ResolveField(() => [CommitmentMonthView], {
    description: 'its months from the first through `through` (default: this month)',
  })
  months(@Parent() c: Commitment, @Args('through', { nullable: true }) through?: string) {
    return this.service.months(c, through ?? undefined);
  }

  @Mutation(() => CommitmentView, {
    description:
      'a committed spend per month over every project in `unit` (one in force per unit), from an open month; ' +
      'each month’s close trues up its shortfall on `projectId`; rollover carries a month’s unused commitment to the next, trued up in `endsMonth`',
  })
  async createCommitment(
    @Context() ctx: CallContext,
    @Args('name') name: string,
    @Args('projectId', { type: () => ID }) projectId: string,
    @Args('unit', { type: () => UnitEnum }) unit: UnitEnum,
    @Args('amount', { description: 'per month, a decimal string' }) amount: string,
    @Args('startsMonth', { description: 'YYYY-MM, not a closed month' }) startsMonth: string,
    @Args('endsMonth', { nullable: true, description: 'YYYY-MM, the last month; required with rollover' })
    endsMonth?: string,
    @Args('rollover', { nullable: true }) rollover?: boolean,
  ) {
    const who = await this.callers.of(ctx);
    const given = {
      name,
      projectId,
      unit,
      amount,
      startsMonth,
      endsMonth: endsMonth ?? null,
      rollover: rollover ?? false,
    };
    return this.changes.run(
      who,
      ctx.client,
      (c: Commitment) => ({ action: 'commitment.create', targetKind: 'commitment', targetId: c.id, after: given }),
      () => this.service.create(given, actorOf(who).label),
    );
  }
}
