import { scopeProjects } from '../auth/access.js';
import { ApiError } from '../common/api-error.js';
import { DateTimeScalar } from '../graphql/scalars.js';
import { requireUuid } from '../common/ids.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { Inject } from '@nestjs/common';
import { Args, Context, ID, Info, Int, Query, Resolver, registerEnumType } from '@nestjs/graphql';
import type { GraphQLResolveInfo, SelectionSetNode } from 'graphql';
import { CONFIG, type Config } from '../config/config.js';
import { dec, ZERO } from '../pricing/money.js';
import { ReportsService } from './reports.service.js';
import { answerDirectly } from '../graphql/answered-directly.js';
import type { GroupKey, Measure, SpendRow as ReportRow } from './spend-report.js';
import { Dashboard, SpendRow, UnitEnum } from '../graphql/graphql.types.js';

export enum SpendOrder {
  KEYS = 'keys',
  AMOUNT_DESC = 'amount',
}
registerEnumType(SpendOrder, {
  name: 'SpendOrder',
  description: 'KEYS: by the grouping keys; AMOUNT_DESC: the largest spend first (needs unit)',
});

/**
 * One GraphQL row per group: the SQL's per-unit rows become `totals`, one Money per unit. The
 * report is sorted by keys then unit, so a group's rows are adjacent. Most groups have a single
 * unit: their figures pass through as the exact strings they are, with no intermediate arrays
 * (a 9,000-group report is answered many times a minute by dashboards).
 */
export function mergeUnits(rows: ReportRow[]): SpendRow[] {
  const out: SpendRow[] = [];
  for (let at = 0; at < rows.length;) {
    let end = at + 1;
    while (end < rows.length && sameKeys(rows[at]!.keys, rows[end]!.keys)) end++;
    out.push(end === at + 1 ? oneUnit(rows[at]!) : severalUnits(rows.slice(at, end)));
    at = end;
  }
  return out;
}

function oneUnit(r: ReportRow): SpendRow {
  return {
    keys: r.keys,
    totals: [{ unit: r.unit as UnitEnum, amount: r.amount }],
    tasks: r.tasks,
    unpricedTasks: r.unpricedTasks,
    tokens: {
      input: r.inputTokens,
      output: r.outputTokens,
      cacheRead: r.cacheReadTokens,
      cacheWrite5m: r.cacheWrite5mTokens,
      cacheWrite1h: r.cacheWrite1hTokens,
      cacheWrite: r.cacheWriteTokens,
    },
    videoSeconds: r.videoSeconds,
    images: r.images,
    apiKeyName: r.apiKeyName ?? null,
  };
}

/** A group with rows in both units: money stays per unit in `totals`; quantities (tokens, seconds) are added up. */
function severalUnits(parts: ReportRow[]): SpendRow {
  const total = (pick: (r: ReportRow) => string) => parts.reduce((s, p) => s.plus(dec(pick(p))), ZERO).toFixed();
  const count = (pick: (r: ReportRow) => number) => parts.reduce((n, p) => n + pick(p), 0);
  return {
    keys: parts[0]!.keys,
    totals: parts.map((p) => ({ unit: p.unit as UnitEnum, amount: p.amount })),
    tasks: count((r) => r.tasks),
    unpricedTasks: count((r) => r.unpricedTasks),
    tokens: {
      input: total((r) => r.inputTokens),
      output: total((r) => r.outputTokens),
      cacheRead: total((r) => r.cacheReadTokens),
      cacheWrite5m: total((r) => r.cacheWrite5mTokens),
      cacheWrite1h: total((r) => r.cacheWrite1hTokens),
      cacheWrite: total((r) => r.cacheWriteTokens),
    },
    videoSeconds: total((r) => r.videoSeconds),
    images: count((r) => r.images),
    apiKeyName: parts[0]!.apiKeyName ?? null,
  };
}

function sameKeys(a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

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
  if (fields.has('unpricedTasks')) measures.push('unpriced');
  if (fields.has('tokens')) measures.push('tokens');
  if (fields.has('videoSeconds') || fields.has('images')) measures.push('media');
  return measures;
}

@Resolver()
export class ReportsResolver {
  constructor(
    private readonly reports: ReportsService,
    private readonly callers: Callers,
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
    const rows = await this.reports.spend({
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
    });
    const answer = mergeUnits(rows);
    // Dashboards poll months of thousands of groups: their JSON is written here (answered-directly.ts).
    if (info && this.config.GRAPHQL_ANSWER_REPORTS_DIRECTLY && answerDirectly(ctx, info, answer)) return [];
    return answer;
  }

  @Query(() => [String], {
    description: 'tag names that tasks carried in [from, to), for spendReport groupBy tag:<name> (at most 200)',
  })
  async tagNames(
    @Context() ctx: CallContext,
    @Args('from', { type: () => DateTimeScalar }) from: Date,
    @Args('to', { type: () => DateTimeScalar }) to: Date,
    @Args('projectIds', { type: () => [ID], nullable: true }) projectIds?: string[],
  ) {
    const who = await this.callers.of(ctx);
    if (!(to > from)) throw ApiError.badRequest('to: must be after from');
    for (const id of projectIds ?? []) requireUuid('projectIds', id);
    return this.reports.tagNames(from, to, scopeProjects(who, projectIds));
  }

  @Query(() => Dashboard, {
    description: 'today and month to date per unit, top models and projects, budgets at 80 % or more',
  })
  async dashboard(@Context() ctx: CallContext) {
    const who = await this.callers.of(ctx);
    return this.reports.dashboard(scopeProjects(who, undefined) ?? null);
  }
}
