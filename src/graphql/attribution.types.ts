/** GraphQL types of attribution (decisions §7): an EACH_USER budget's users, a key as listed. */
import { Field, Int, ObjectType, registerEnumType } from '@nestjs/graphql';
import type { Decimal } from '../pricing/money.js';
import { PageInfo } from './graphql.types.js';
import { DecimalValue, DateTimeScalar } from './scalars.js';

@ObjectType({ description: "one end user's own balance of an EACH_USER budget, in the budget's current window" })
export class UserBalance {
  @Field() user!: string;
  @Field(() => DecimalValue) spent!: Decimal;
  @Field(() => DecimalValue) held!: Decimal;
  @Field(() => DecimalValue, { description: 'limit − spent − held (negative after an overrun)' }) remaining!: Decimal;
}

@ObjectType()
export class UserBalanceEdge {
  @Field() cursor!: string;
  @Field(() => UserBalance) node!: UserBalance;
}

@ObjectType()
export class UserBalanceConnection {
  @Field(() => [UserBalanceEdge]) edges!: UserBalanceEdge[];
  @Field(() => PageInfo) pageInfo!: PageInfo;
}

@ObjectType({ description: 'an API key as listed: never its secret' })
export class ApiKeyInfo {
  @Field() prefix!: string;
  @Field(() => [String], { description: 'default tags of the tasks it submits' }) tags!: string[];
  @Field(() => String, { nullable: true, description: 'what people call it' }) name!: string | null;
  @Field(() => String, { nullable: true, description: 'who issued it (the audit trail names them the same way)' })
  createdBy!: string | null;
  @Field(() => DateTimeScalar) createdAt!: Date;
  @Field(() => DateTimeScalar, { nullable: true }) expiresAt!: Date | null;
  @Field(() => DateTimeScalar, { nullable: true, description: 'to the minute' }) lastUsedAt!: Date | null;
  @Field(() => DateTimeScalar, { nullable: true }) revokedAt!: Date | null;
}

export enum BudgetEventKind {
  THRESHOLD = 'THRESHOLD',
  REFUSED = 'REFUSED',
}
registerEnumType(BudgetEventKind, {
  name: 'BudgetEventKind',
  description: 'THRESHOLD: use crossed a threshold; REFUSED: the budget refused a submission',
});

@ObjectType({
  description:
    'what happened to a budget in its current window: a threshold crossed, or the first refusal (per user for EACH_USER)',
})
export class BudgetEvent {
  @Field(() => BudgetEventKind) kind!: BudgetEventKind;
  @Field(() => DateTimeScalar) at!: Date;
  @Field(() => Int, { nullable: true, description: 'THRESHOLD: the percentage crossed' }) threshold!: number | null;
  @Field(() => String, { nullable: true, description: 'EACH_USER: the end user' }) user!: string | null;
}
