/**
 * Vendor reconciliation over GraphQL (decisions §14; interfaces.md): import, read, decide. Finance and owners
 * (`books`).
 */
import { Readable } from 'node:stream';
import { Args, Context, Field, ID, InputType, Int, Mutation, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { actorOf } from '../auth/access.js';
import { ApiError } from '../common/api-error.js';
import { calendarDate } from '../common/dates.js';
import { requirePageSize } from '../common/paging.js';
import { PageInfo, UnitEnum } from '../graphql/graphql.types.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { DecimalValue, DateTimeScalar } from '../graphql/scalars.js';
import { CLASSES, ReconciliationService, type ItemRow, type StatementRow } from './reconciliation.service.js';
import type { ColumnMapping as Mapping, Field as MappingField } from './statement-format.js';

@InputType('ColumnMapping', {
  description:
    'where a field is in the statement: field taskId | model | time | amount | unit | currency; scale on the amount (0.01: cents); format on the time (iso, epoch-s, epoch-ms, MM/DD/YYYY, DD/MM/YYYY)',
})
export class ColumnMappingInput {
  @Field() field!: string;
  @Field() column!: string;
  @Field(() => String, { nullable: true }) scale?: string;
  @Field(() => String, { nullable: true }) format?: string;
}

@ObjectType()
export class VendorClassTotal {
  @Field({
    description: 'matched | amount_differs | billed_again | billed_not_ours | ours_not_billed | duplicate | pending',
  })
  class!: string;
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field(() => Int) count!: number;
  @Field(() => DecimalValue) theirs!: string;
  @Field(() => DecimalValue) ours!: string;
}

@ObjectType()
export class VendorDayModelTotal {
  @Field() day!: string;
  @Field() model!: string;
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field(() => DecimalValue) theirs!: string;
  @Field(() => DecimalValue) ours!: string;
  @Field(() => DecimalValue, { description: 'theirs − ours' }) difference!: string;
}

@ObjectType({ description: 'a vendor statement matched against the ledger' })
export class VendorReconciliation {
  @Field(() => ID) id!: string;
  @Field(() => DateTimeScalar) importedAt!: Date;
  @Field() importedBy!: string;
  @Field(() => Int) rows!: number;
  @Field(() => Int, { description: 'rows an earlier statement already held: skipped' }) repeated!: number;
  @Field(() => DateTimeScalar, { nullable: true }) periodFrom!: Date | null;
  @Field(() => DateTimeScalar, { nullable: true }) periodTo!: Date | null;
  @Field(() => [VendorClassTotal]) classes!: VendorClassTotal[];
  @Field(() => [VendorDayModelTotal]) byDayModel!: VendorDayModelTotal[];
  @Field({ description: 'GET this path for the differences as CSV (to send to the vendor)' })
  differencesCsvPath!: string;
  @Field({ description: 'false: this file was imported before; this is that statement, unchanged' }) created!: boolean;
}

@ObjectType()
export class VendorDifference {
  @Field(() => ID) id!: string;
  @Field(() => ID) statementId!: string;
  @Field() class!: string;
  @Field(() => String, { nullable: true }) vendorTaskId!: string | null;
  @Field(() => ID, { nullable: true }) taskId!: string | null;
  @Field(() => ID, { nullable: true }) projectId!: string | null;
  @Field(() => String, { nullable: true }) model!: string | null;
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field(() => DecimalValue, { nullable: true }) ours!: string | null;
  @Field(() => DecimalValue, { nullable: true }) theirs!: string | null;
  @Field(() => DecimalValue, { nullable: true, description: 'theirs − ours' }) difference!: string | null;
  @Field({ description: 'open | accepted | disputed' }) state!: string;
  @Field(() => String, { nullable: true }) note!: string | null;
  @Field(() => String, { nullable: true }) resolvedBy!: string | null;
  @Field(() => DateTimeScalar, { nullable: true }) resolvedAt!: Date | null;
}

@ObjectType()
class VendorReconciliationEdge {
  @Field() cursor!: string;
  @Field(() => VendorReconciliation) node!: VendorReconciliation;
}
@ObjectType()
export class VendorReconciliationConnection {
  @Field(() => [VendorReconciliationEdge]) edges!: VendorReconciliationEdge[];
  @Field(() => PageInfo) pageInfo!: PageInfo;
}
@ObjectType()
class VendorDifferenceEdge {
  @Field() cursor!: string;
  @Field(() => VendorDifference) node!: VendorDifference;
}
@ObjectType()
export class VendorDifferenceConnection {
  @Field(() => [VendorDifferenceEdge]) edges!: VendorDifferenceEdge[];
  @Field(() => PageInfo) pageInfo!: PageInfo;
}

export function toReconciliation(s: StatementRow, created = true): VendorReconciliation {
  return {
    ...s,
    classes: s.summary.classes.map((c) => ({ ...c, unit: c.unit as UnitEnum })),
    byDayModel: s.summary.byDayModel.map((d) => ({ ...d, unit: d.unit as UnitEnum })),
    differencesCsvPath: `/reports/vendor-statements/${s.id}/differences.csv`,
    created,
  };
}

const toDifference = (i: ItemRow): VendorDifference => ({ ...i, unit: i.unit as UnitEnum });

@Resolver()
export class VendorStatementsResolver {
  constructor(
    private readonly reconciliation: ReconciliationService,
    private readonly callers: Callers,
  ) {}

  @Mutation(() => VendorReconciliation, {
    description:
      'imports a vendor statement (CSV) and matches it against the ledger; the same file again changes nothing',
  })
  async importVendorStatement(
    @Context() ctx: CallContext,
    @Args('csv') csv: string,
    @Args('mapping', { type: () => [ColumnMappingInput], nullable: true }) mapping?: ColumnMappingInput[],
  ) {
    const who = await this.callers.of(ctx);
    const done = await this.reconciliation.import(
      Readable.from([csv]),
      mapping?.map((m) => ({ ...m, field: m.field as MappingField })) as Mapping[] | undefined,
      who,
      ctx.client,
      actorOf(who).label,
    );
    return toReconciliation(done.statement, done.created);
  }

  @Query(() => VendorReconciliationConnection, { description: 'imported statements, newest first' })
  async vendorReconciliations(
    @Args('first', { type: () => Int, defaultValue: 20 }) first: number,
    @Args('after', { type: () => String, nullable: true }) after?: string,
  ) {
    requirePageSize(first, 100);
    // A cursor is an import's instant, read by the one rule for dates that enter (a year past 9999 or
    // before 1 would reach the query as text PostgreSQL refuses).
    const at = after ? calendarDate(after) : undefined;
    if (at === null) throw ApiError.badRequest('after: is not a cursor of this list');
    const rows = await this.reconciliation.statements(first + 1, at?.toISOString());
    const edges = rows.slice(0, first).map((s) => ({ cursor: s.importedAt.toISOString(), node: toReconciliation(s) }));
    return { edges, pageInfo: { hasNextPage: rows.length > first, endCursor: edges.at(-1)?.cursor ?? null } };
  }

  @Query(() => VendorReconciliation, { nullable: true })
  async vendorReconciliation(@Args('id', { type: () => ID }) id: string) {
    if (!/^[0-9a-f-]{36}$/i.test(id)) return null;
    const s = await this.reconciliation.statement(id);
    return s ? toReconciliation(s) : null;
  }

  @Query(() => VendorDifferenceConnection, {
    description: "a statement's differences (every class but matched), in order",
  })
  async vendorDifferences(
    @Args('reconciliationId', { type: () => ID }) id: string,
    @Args('classes', { type: () => [String], nullable: true }) classes?: string[],
    @Args('state', { type: () => String, nullable: true }) state?: string,
    @Args('first', { type: () => Int, defaultValue: 50 }) first = 50,
    @Args('after', { type: () => String, nullable: true }) after?: string,
  ) {
    requirePageSize(first, 500);
    if (!/^[0-9a-f-]{36}$/i.test(id)) throw ApiError.notFound('no such reconciliation');
    const bad = classes?.find((c) => !(CLASSES as readonly string[]).includes(c));
    if (bad !== undefined)
      throw ApiError.badRequest(`classes: "${bad.slice(0, 30)}" is not one of ${CLASSES.join(', ')}`);
    if (state !== undefined && state !== null && !['open', 'accepted', 'disputed'].includes(state))
      throw ApiError.badRequest('state: open, accepted or disputed');
    if (after !== undefined && after !== null && !/^\d{1,18}$/.test(after))
      throw ApiError.badRequest('after: is not a cursor of this list');
    const rows = await this.reconciliation.items(
      id,
      { ...(classes ? { classes } : {}), ...(state ? { state } : {}) },
      first + 1,
      after ?? undefined,
    );
    const edges = rows.slice(0, first).map((i) => ({ cursor: i.id, node: toDifference(i) }));
    return { edges, pageInfo: { hasNextPage: rows.length > first, endCursor: edges.at(-1)?.cursor ?? null } };
  }

  @Mutation(() => VendorDifference, {
    description:
      "takes the vendor's figure: an adjustment of the exact difference (prior-period if its month is closed), audited",
  })
  async acceptVendorDifference(
    @Context() ctx: CallContext,
    @Args('id', { type: () => ID }) id: string,
    @Args('note', { type: () => String, nullable: true }) note?: string,
  ) {
    const who = await this.callers.of(ctx);
    return toDifference(await this.reconciliation.accept(id, note ?? undefined, who, ctx.client, actorOf(who).label));
  }

  @Mutation(() => VendorDifference, {
    description: 'marks a difference disputed with the vendor, with a note; no money moves',
  })
  async disputeVendorDifference(
    @Context() ctx: CallContext,
    @Args('id', { type: () => ID }) id: string,
    @Args('note') note: string,
  ) {
    const who = await this.callers.of(ctx);
    return toDifference(await this.reconciliation.dispute(id, note, who, ctx.client, actorOf(who).label));
  }
}
