import { scopeProjects } from '../auth/access.js';
import { ApiError } from '../common/api-error.js';
import { DateTimeScalar } from '../graphql/scalars.js';
import { requireUuid } from '../common/ids.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { Inject } from '@nestjs/common';
import { Args, Context, ID, Info, Int, Query, Resolver, registerEnumType } from '@nestjs/graphql';
import type { GraphQLResolveInfo, SelectionSetNode } from 'graphql';
import { CONFIG, type Config } from '../config/config.js';
import { ReportsService } from './reports.service.js';
import { placeDirectly } from '../graphql/answered-directly.js';
import { spendAnswer } from './spend-answers.js';
import { arrivalOf, ReportCache } from '../report-cache/report-cache.service.js';
import { recordField } from '../report-cache/graphql-answers.js';
import type { GroupKey, Measure, ReportQuery } from './spend-report.js';
import { Dashboard, SpendRow, UnitEnum } from '../graphql/graphql.types.js';

export enum SpendOrder {
  KEYS = 'keys',
  AMOUNT_DESC = 'amount',
}
registerEnumType(SpendOrder, {
  name: 'SpendOrder',
  description: 'KEYS: by the grouping keys; AMOUNT_DESC: the largest spend first (needs unit)',
});

/** The optional measures the query selects (fragments included), so only those are summed. */
function measuresSelected(info: GraphQLResolveInfo): Measure[] {
  const fields = new Set<string>();
  const visit = (set: SelectionSetNode | undefined) => {
    for (const sel of set?.selections ?? []) {
      if (sel.kind === 'Field') fields.add(sel.name.value);
      else if (sel.kind === 'InlineFragment') visit(sel.selectionSet);
      else if (sel.kind === 'FragmentSpread') visit(info.fragments[sel.name.value]?.selectionSet);
    }
  };
  for (const node of info.fieldNodes) visit(node.selectionSet);
  const measures: Measure[] = [];
  if (fields.has('unpricedTasks') || fields.has('unpricedTasksExact')) measures.push('unpriced');
  if (fields.has('tokens')) measures.push('tokens');
  if (fields.has('videoSeconds') || fields.has('images') || fields.has('imagesExact')) measures.push('media');
  return measures;
}

@Resolver()
export class ReportsResolver {
  constructor(
    private readonly reports: ReportsService,
    private readonly callers: Callers,
    private readonly cache: ReportCache,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  @Query(() => [SpendRow], {
    description: 'spend posted in [from, to) (UTC midnights), per unit, from the daily roll-up',
  })
  async spendReport(
    @Context() ctx: CallContext,
    @Args('from', { type: () => DateTimeScalar, description: 'a UTC midnight, included' }) from: Date,
    @Args('to', {
      type: () => DateTimeScalar,
      description: 'a UTC midnight, excluded: the day after the last day counted',
    })
    to: Date,
    @Args('projectIds', { type: () => [ID], nullable: true }) projectIds?: string[],
    @Args('models', { type: () => [String], nullable: true }) models?: string[],
    @Args('families', { type: () => [String], nullable: true }) families?: string[],
    @Args('kinds', { type: () => [String], nullable: true }) kinds?: string[],
    @Args('statuses', { type: () => [String], nullable: true, description: 'ready, failed, adjustment, resolved' })
    statuses?: string[],
    @Args('groupBy', {
      type: () => [String],
      nullable: true,
      description:
        'any of project, model, family, kind, day, week, month; and one of apiKey, user (month-aligned), tag:<name>',
    })
    groupBy?: string[],
    @Args('apiKeys', { type: () => [String], nullable: true, description: 'key prefixes; (none): tasks without a key' })
    apiKeys?: string[],
    @Args('users', { type: () => [String], nullable: true, description: 'end users; (none): tasks without one' })
    users?: string[],
    @Args('tags', { type: () => [String], nullable: true, description: 'name=value, values of one tag name' })
    tags?: string[],
    @Args('unit', { type: () => UnitEnum, nullable: true, description: 'only this unit (required to order by amount)' })
    unit?: UnitEnum,
    @Args('orderBy', { type: () => SpendOrder, nullable: true, description: 'default KEYS' }) orderBy?: SpendOrder,
    @Args('first', {
      type: () => Int,
      nullable: true,
      description: 'at most this many groups, after ordering (1 to 10000)',
    })
    first?: number,
    @Info() info?: GraphQLResolveInfo,
  ) {
    const who = await this.callers.of(ctx);
    const scoped = scopeProjects(who, projectIds);
    const query: ReportQuery = {
      from,
      to,
      groupBy: (groupBy ?? []) as GroupKey[],
      ...(info ? { measures: measuresSelected(info) } : {}),
      ...(scoped ? { projectIds: scoped } : {}),
      ...(models ? { models } : {}),
      ...(families ? { families } : {}),
      ...(kinds ? { kinds } : {}),
      ...(statuses ? { statuses } : {}),
      ...(apiKeys ? { apiKeys } : {}),
      ...(users ? { users } : {}),
      ...(tags ? { tags } : {}),
      ...(unit ? { unit } : {}),
      ...(orderBy ? { orderBy } : {}),
      ...(first !== undefined && first !== null ? { first } : {}),
    };
    // Dashboards poll months of thousands of groups: written once, kept while the books stand (spend-answers.ts).
    const direct = !!info && this.config.GRAPHQL_ANSWER_REPORTS_DIRECTLY;
    const answer = await spendAnswer(this.cache, this.reports, ctx, info, query, direct);
    if (info) recordField(ctx, info, answer);
    const value = answer.value;
    if (Array.isArray(value)) return value;
    const { json } = value as { json: readonly Buffer[] };
    return placeDirectly(ctx, info!, json, answer.digest)
      ? []
      : (JSON.parse(Buffer.concat(json).toString()) as SpendRow[]);
  }

  @Query(() => [String], {
    description: 'tag names that tasks carried in [from, to), for spendReport groupBy tag:<name> (at most 200)',
  })
  async tagNames(
    @Context() ctx: CallContext,
    @Args('from', { type: () => DateTimeScalar }) from: Date,
    @Args('to', { type: () => DateTimeScalar }) to: Date,
    @Args('projectIds', { type: () => [ID], nullable: true }) projectIds?: string[],
    @Info() info?: GraphQLResolveInfo,
  ) {
    const who = await this.callers.of(ctx);
    if (!(to > from)) throw ApiError.badRequest('to: must be after from');
    for (const id of projectIds ?? []) requireUuid('projectIds', id);
    const scoped = scopeProjects(who, projectIds);
    const key = `tagNames ${JSON.stringify({ from, to, projectIds: scoped?.toSorted() })}`;
    const answer = await this.cache.answer(ctx, arrivalOf(ctx), key, { projectIds: scoped, from, to }, () =>
      this.reports.tagNames(from, to, scoped),
    );
    if (info) recordField(ctx, info, answer);
    return answer.value;
  }

  @Query(() => Dashboard, {
    description: 'today and month to date per unit, top models and projects, budgets at 80 % or more',
  })
  async dashboard(@Context() ctx: CallContext) {
    const who = await this.callers.of(ctx);
    return this.reports.dashboard(scopeProjects(who, undefined) ?? null);
  }
}
