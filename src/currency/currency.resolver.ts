/**
 * The credit price, FX rates and converted figures over GraphQL (decisions §19): finance enters the
 * rates (audited); anyone who reads spend reads converted totals, labelled, beside the exact ones.
 */
import { Args, Context, ID, Int, Mutation, Parent, Query, ResolveField, Resolver } from '@nestjs/graphql';
import { ChangesService } from '../audit/changes.service.js';
import { actorOf, scopeProjects } from '../auth/access.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { Statement } from '../closing/closing.resolver.js';
import { cleanText } from '../common/text.js';
import { Dashboard } from '../graphql/graphql.types.js';
import { DateTimeScalar } from '../graphql/scalars.js';
import type { GroupKey } from '../reports/spend-report.js';
import { ConvertedSpendService } from './converted-spend.service.js';
import { ConvertedSpend, ConvertedTotal, RateVersionView } from './currency.types.js';
import { RatesService } from '../rates/rates.service.js';

const noteOf = (note?: string | null) =>
  note === undefined || note === null ? undefined : cleanText('note', note, 500, { multiline: true });

@Resolver()
export class CurrencyResolver {
  constructor(
    private readonly rates: RatesService,
    private readonly converted: ConvertedSpendService,
    private readonly callers: Callers,
    private readonly changes: ChangesService,
  ) {}

  @Mutation(() => Int, {
    description: 'finance’s USD price of one credit from `effectiveMonth` (YYYY-MM, not a closed month); the version',
  })
  async setCreditPrice(
    @Context() ctx: CallContext,
    @Args('effectiveMonth') effectiveMonth: string,
    @Args('usdPerCredit', { description: 'a decimal string above zero' }) usdPerCredit: string,
    @Args('note', { nullable: true }) note?: string,
  ) {
    return this.audited(ctx, 'rates.credit_price', 'credit-price', { effectiveMonth, usdPerCredit }, note, (why, by) =>
      this.rates.setCreditPrice(effectiveMonth, usdPerCredit, why, by),
    );
  }

  @Mutation(() => Int, {
    description:
      'an FX rate, units of `currency` per USD, from `effectiveMonth` (YYYY-MM, not a closed month); the version',
  })
  async setFxRate(
    @Context() ctx: CallContext,
    @Args('currency', { description: 'ISO 4217, e.g. EUR' }) currency: string,
    @Args('effectiveMonth') effectiveMonth: string,
    @Args('perUsd', { description: 'a decimal string above zero' }) perUsd: string,
    @Args('note', { nullable: true }) note?: string,
  ) {
    return this.audited(ctx, 'rates.fx', 'fx-rate', { currency, effectiveMonth, perUsd }, note, (why, by) =>
      this.rates.setFxRate(currency, effectiveMonth, perUsd, why, by),
    );
  }

  /** A rate published by the caller, audited with what was asked and the version made. */
  private async audited(
    ctx: CallContext,
    action: string,
    targetKind: string,
    asked: Record<string, string>,
    note: string | undefined,
    publish: (why: string | undefined, by: string) => Promise<number>,
  ): Promise<number> {
    const who = await this.callers.of(ctx);
    const why = noteOf(note);
    return this.changes.run(
      who,
      ctx.client,
      (version: number) => ({ action, targetKind, targetId: String(version), after: { ...asked, note: why ?? null } }),
      () => publish(why, actorOf(who).label),
    );
  }

  @Query(() => [RateVersionView], { description: 'the credit price’s versions (currency given: that FX rate’s)' })
  async conversionRates(
    @Context() ctx: CallContext,
    @Args('currency', { nullable: true, description: 'omitted or USD: the credit price' }) currency?: string,
  ) {
    await this.callers.of(ctx);
    const code = currency ? RatesService.currency('currency', currency) : 'USD';
    return this.rates.list(code === 'USD' ? null : code);
  }

  @Query(() => [String], { description: 'USD, then every currency finance has entered an FX rate for' })
  async reportingCurrencies(@Context() ctx: CallContext) {
    await this.callers.of(ctx);
    return ['USD', ...(await this.rates.currencies())];
  }

  @Query(() => ConvertedSpend, {
    description:
      'spend posted in [from, to) per group and unit, exact, with each figure and the total converted to `currency` ' +
      'at the rates of its month (labelled; credits and USD are summed only converted)',
  })
  async convertedSpend(
    @Context() ctx: CallContext,
    @Args('from', { type: () => DateTimeScalar }) from: Date,
    @Args('to', { type: () => DateTimeScalar }) to: Date,
    @Args('currency', { description: 'USD or a currency with an FX rate' }) currency: string,
    @Args('groupBy', { type: () => [String], nullable: true }) groupBy?: string[],
    @Args('projectIds', { type: () => [ID], nullable: true }) projectIds?: string[],
    @Args('models', { type: () => [String], nullable: true }) models?: string[],
  ) {
    const who = await this.callers.of(ctx);
    const scoped = scopeProjects(who, projectIds);
    return this.converted.report(
      {
        from,
        to,
        groupBy: (groupBy ?? []) as GroupKey[],
        ...(scoped ? { projectIds: scoped } : {}),
        ...(models ? { models } : {}),
      },
      RatesService.currency('currency', currency),
    );
  }
}

/** A statement's totals converted at its month's rates, beside its exact per-unit totals. */
@Resolver(() => Statement)
export class StatementConversionResolver {
  constructor(private readonly conversions: ConvertedSpendService) {}

  @ResolveField(() => ConvertedTotal, { description: 'the month’s totals converted (labelled, naming the versions)' })
  converted(@Parent() statement: Statement, @Args('currency') currency: string) {
    const totals = statement.totals.map((t) => ({ unit: t.unit, amount: String(t.amount) }));
    return this.conversions.month(statement.month, totals, RatesService.currency('currency', currency));
  }
}

/** The dashboard's month to date converted (every unit, at this month's rates), beside its exact per-unit totals. */
@Resolver(() => Dashboard)
export class DashboardConversionResolver {
  constructor(
    private readonly conversions: ConvertedSpendService,
    private readonly callers: Callers,
  ) {}

  @ResolveField(() => ConvertedTotal, { description: 'month to date converted (labelled, naming the versions)' })
  async monthToDateConverted(@Context() ctx: CallContext, @Args('currency') currency: string) {
    const scoped = scopeProjects(await this.callers.of(ctx), undefined);
    const now = new Date();
    const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
    const { rows: _rows, ...total } = await this.conversions.report(
      { from, to, groupBy: [], ...(scoped ? { projectIds: scoped } : {}) },
      RatesService.currency('currency', currency),
    );
    return total;
  }
}
