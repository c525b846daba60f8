/** GraphQL object types (code-first). Money fields are Decimal (exact strings). */
import { Field, ID, Int, ObjectType, registerEnumType } from '@nestjs/graphql';
import { CAPPED } from '../common/counts.js';
import type { Decimal } from '../pricing/money.js';
import { DecimalValue, DateTimeScalar } from './scalars.js';

export enum UnitEnum {
  CREDITS = 'CREDITS',
  USD = 'USD',
}
export enum ExactnessEnum {
  EXACT = 'EXACT',
  ESTIMATE = 'ESTIMATE',
  UNPRICED = 'UNPRICED',
}
export enum PeriodEnum {
  DAILY = 'DAILY',
  WEEKLY = 'WEEKLY',
  MONTHLY = 'MONTHLY',
  LIFETIME = 'LIFETIME',
}
export enum UnpricedPolicyEnum {
  block = 'block',
  allow = 'allow',
}
export enum FailurePolicyEnum {
  release = 'release',
  charge = 'charge',
}
export enum TaskResolutionEnum {
  CHARGE = 'CHARGE',
  RELEASE = 'RELEASE',
}
export enum BudgetScopeEnum {
  PROJECT = 'PROJECT',
  API_KEY = 'API_KEY',
  TAG = 'TAG',
  USER = 'USER',
  EACH_USER = 'EACH_USER',
}
registerEnumType(UnitEnum, { name: 'Unit' });
registerEnumType(ExactnessEnum, { name: 'Exactness' });
registerEnumType(PeriodEnum, { name: 'Period' });
registerEnumType(UnpricedPolicyEnum, { name: 'UnpricedPolicy' });
registerEnumType(FailurePolicyEnum, { name: 'FailurePolicy' });
registerEnumType(TaskResolutionEnum, { name: 'TaskResolution' });
registerEnumType(BudgetScopeEnum, { name: 'BudgetScope', description: 'what a budget counts (decisions §7)' });

/**
 * GraphQL's `Money` (interfaces.md): an amount in its unit as the API shows it; pricing's Money is the arithmetic type.
 */
@ObjectType('Money')
export class MoneyAmount {
  @Field(() => UnitEnum) unit!: UnitEnum;
  /** A Decimal, or an exact decimal string straight from PostgreSQL (never a float). */
  @Field(() => DecimalValue) amount!: Decimal | string;
}

@ObjectType()
export class ChargeLine {
  @Field() component!: string;
  @Field(() => DecimalValue) quantity!: Decimal;
  @Field(() => DecimalValue, {
    description: 'the rate owed, per `per` units of quantity: the published rate, or the contracted one (listRate set)',
  })
  rate!: Decimal;
  @Field(() => DecimalValue, { description: '1000000 for token lines, 1 otherwise' }) per!: Decimal;
  @Field(() => DecimalValue, { description: 'quantity × rate / per, exact' }) amount!: Decimal;
  @Field(() => DecimalValue, {
    nullable: true,
    description:
      'the price book’s rate when a contract term priced this line (decisions §19); null: rate is the list rate',
  })
  listRate?: Decimal | null;
  @Field(() => DecimalValue, { nullable: true, description: 'quantity × listRate / per, when listRate is set' })
  listAmount?: Decimal | null;
}

@ObjectType()
export class Charge {
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field(() => DecimalValue) amount!: Decimal;
  @Field(() => ExactnessEnum) exactness!: ExactnessEnum;
  @Field(() => String, { nullable: true }) tier!: string | null;
  @Field(() => [ChargeLine]) lines!: ChargeLine[];
  @Field(() => [String]) warnings!: string[];
}

@ObjectType()
export class LedgerEntry {
  @Field(() => ID) id!: string;
  @Field() kind!: string;
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field(() => DecimalValue) amount!: Decimal;
  @Field(() => DateTimeScalar) effectiveAt!: Date;
  @Field(() => DateTimeScalar) createdAt!: Date;
  @Field(() => String, { nullable: true }) reason!: string | null;
}

@ObjectType({ description: "an operator's decision on a task under review (decisions §10)" })
export class Resolution {
  @Field(() => TaskResolutionEnum) outcome!: TaskResolutionEnum;
  @Field() reason!: string;
  @Field(() => DateTimeScalar) resolvedAt!: Date;
}

@ObjectType()
export class Task {
  @Field(() => ID, { description: 'the upstream numeric taskId (gw-<n> when the upstream never assigned one)' })
  taskId!: string;
  @Field(() => ID) projectId!: string;
  @Field(() => String, { nullable: true, description: 'the public prefix of the API key that submitted it' })
  apiKeyPrefix!: string | null;
  @Field(() => String, { nullable: true, description: 'the end user the client named (X-Spendgate-User)' }) user!:
    string | null;
  @Field(() => [String], { description: "its key's and its request's tags, name=value" }) tags!: string[];
  @Field() model!: string;
  @Field() kind!: string;
  @Field({ description: 'submitting | processing | ready | failed | unknown | rejected' }) status!: string;
  @Field(() => DateTimeScalar) acceptedAt!: Date;
  @Field(() => DateTimeScalar, { nullable: true }) settledAt!: Date | null;
  @Field(() => Int) priceBookVersion!: number;
  @Field(() => Charge, { nullable: true }) estimate!: Charge | null;
  @Field(() => ExactnessEnum) exactness!: ExactnessEnum;
  @Field(() => Charge, { nullable: true }) charge!: Charge | null;
  @Field(() => DecimalValue, { description: 'the amount held until settlement' }) held!: Decimal;
  @Field() needsReview!: boolean;
  @Field(() => String, { nullable: true }) reviewReason!: string | null;
  @Field(() => DecimalValue, {
    nullable: true,
    description: 'charge minus hold when the settled charge passed the hold, else null',
  })
  overrun!: Decimal | null;
  @Field(() => Resolution, { nullable: true }) resolution!: Resolution | null;
  @Field(() => DecimalValue, {
    description: "the sum of the task's adjustments (negative: a credit), e.g. a resolution below its settled charge",
  })
  adjustments!: Decimal;
  @Field(() => DecimalValue, {
    nullable: true,
    description: 'what the task costs after its adjustments (charge + adjustments); null until charged',
  })
  net!: Decimal | null;
  @Field(() => [LedgerEntry]) ledgerEntries!: LedgerEntry[];
}

@ObjectType()
export class Project {
  @Field(() => ID) id!: string;
  @Field() name!: string;
  @Field(() => UnpricedPolicyEnum) unpricedPolicy!: UnpricedPolicyEnum;
  @Field(() => FailurePolicyEnum) failurePolicy!: FailurePolicyEnum;
  @Field(() => DecimalValue, { description: 'chat holds are the estimate × this (≥ 1; default 1)' })
  chatHoldMultiplier!: Decimal;
}

@ObjectType()
export class PriceBookVersionInfo {
  @Field(() => Int) version!: number;
  @Field(() => DateTimeScalar) effectiveAt!: Date;
}

@ObjectType()
export class TokenSums {
  @Field(() => DecimalValue) input!: string;
  @Field(() => DecimalValue) output!: string;
  @Field(() => DecimalValue) cacheRead!: string;
  @Field(() => DecimalValue) cacheWrite5m!: string;
  @Field(() => DecimalValue) cacheWrite1h!: string;
  @Field(() => DecimalValue, { description: 'cache writes reported without a lifetime (GPT-5.6: one rate)' })
  cacheWrite!: string;
}

@ObjectType()
export class SpendRow {
  @Field(() => [String], { description: 'the group, in the order of groupBy' }) keys!: string[];
  @Field(() => [MoneyAmount], { description: 'one total per unit; credits and USD are never summed' })
  totals!: MoneyAmount[];
  @Field(() => Int, { description: CAPPED('tasksExact') }) tasks!: number;
  @Field({ description: 'tasks, exactly, in digits' }) tasksExact!: string;
  @Field(() => Int, { description: CAPPED('unpricedTasksExact') }) unpricedTasks!: number;
  @Field({ description: 'unpricedTasks, exactly, in digits' }) unpricedTasksExact!: string;
  @Field(() => TokenSums) tokens!: TokenSums;
  @Field(() => DecimalValue) videoSeconds!: string;
  @Field(() => Int, { description: CAPPED('imagesExact') }) images!: number;
  @Field({ description: 'images, exactly, in digits' }) imagesExact!: string;
  @Field(() => String, { nullable: true, description: "grouped by apiKey: the key's name, beside its prefix in keys" })
  apiKeyName!: string | null;
}

@ObjectType()
export class RankedSpend {
  @Field() key!: string;
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field(() => DecimalValue) amount!: string;
  @Field(() => Int, { description: CAPPED('tasksExact') }) tasks!: number;
  @Field({ description: 'tasks, exactly, in digits' }) tasksExact!: string;
}

@ObjectType()
export class BudgetUse {
  @Field(() => ID) budgetId!: string;
  @Field(() => ID) projectId!: string;
  @Field() projectName!: string;
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field(() => PeriodEnum) period!: PeriodEnum;
  @Field(() => DecimalValue) limit!: string;
  @Field(() => DecimalValue, { description: 'spent + held' }) used!: string;
  @Field({ description: 'used / limit × 100, rounded half-even to 2 places (display)' }) percentUsed!: string;
}

@ObjectType()
export class Dashboard {
  @Field(() => [MoneyAmount]) today!: MoneyAmount[];
  @Field(() => [MoneyAmount]) monthToDate!: MoneyAmount[];
  @Field(() => [RankedSpend], { description: 'top 5 models this month, per unit' }) topModels!: RankedSpend[];
  @Field(() => [RankedSpend], { description: 'top 5 projects this month, per unit' }) topProjects!: RankedSpend[];
  @Field(() => [BudgetUse]) budgetsAbove80!: BudgetUse[];
}

@ObjectType()
export class TaskEdge {
  @Field() cursor!: string;
  @Field(() => Task) node!: Task;
}

@ObjectType()
export class PageInfo {
  @Field() hasNextPage!: boolean;
  @Field(() => String, { nullable: true }) endCursor!: string | null;
}

@ObjectType()
export class TaskConnection {
  @Field(() => [TaskEdge]) edges!: TaskEdge[];
  @Field(() => PageInfo) pageInfo!: PageInfo;
}

@ObjectType()
export class PriceRate {
  @Field() model!: string;
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field() component!: string;
  @Field() key!: string;
  @Field(() => String, { nullable: true }) tier!: string | null;
  @Field(() => Int, { nullable: true }) tierMaxInput!: number | null;
  @Field(() => DecimalValue, { description: 'the list rate' }) rate!: string;
  @Field(() => DecimalValue, {
    description: 'what the version’s contract makes of it (decisions §19): the list rate when no term covers it',
  })
  contractedRate!: string;
}

@ObjectType({
  description: 'a contract term (decisions §19): a discount of a model, family or kind, or a net rate of one line',
})
export class ContractTermView {
  @Field() scope!: string;
  @Field() value!: string;
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field(() => DecimalValue, { nullable: true }) discountPercent!: string | null;
  @Field(() => String, { nullable: true }) component!: string | null;
  @Field(() => String, { nullable: true }) tier!: string | null;
  @Field(() => DecimalValue, { nullable: true }) netRate!: string | null;
}

@ObjectType()
export class PriceBook {
  @Field(() => Int) version!: number;
  @Field(() => DateTimeScalar) effectiveAt!: Date;
  @Field(() => DateTimeScalar) publishedAt!: Date;
  @Field(() => String, { nullable: true }) note!: string | null;
  @Field(() => [PriceRate]) rates!: PriceRate[];
  @Field(() => [ContractTermView], {
    description: 'the contract this version carries: what is owed instead of the list rates',
  })
  contract!: ContractTermView[];
}
