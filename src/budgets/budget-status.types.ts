/**
 * GraphQL's view of a budget where it stands (budgetStatus): its scope, its part of the catalog
 * (decisions §20) and its balance in the current window.
 */
import { Field, ID, Int, ObjectType, registerEnumType } from '@nestjs/graphql';
import { BudgetScopeEnum, PeriodEnum, UnitEnum } from '../graphql/graphql.types.js';
import { DateTimeScalar, DecimalValue } from '../graphql/scalars.js';
import type { Decimal } from '../pricing/money.js';

export enum ModelScopeEnum {
  MODEL = 'MODEL',
  FAMILY = 'FAMILY',
  KIND = 'KIND',
}
registerEnumType(ModelScopeEnum, {
  name: 'ModelScope',
  description: 'the part of the catalog a budget counts, with its scope (decisions §20): one model, family or kind',
});

@ObjectType()
export class BudgetStatus {
  @Field(() => ID) budgetId!: string;
  @Field(() => ID) projectId!: string;
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field(() => PeriodEnum) period!: PeriodEnum;
  @Field() hard!: boolean;
  @Field(() => BudgetScopeEnum) scope!: BudgetScopeEnum;
  @Field(() => String, {
    nullable: true,
    description: "API_KEY: the key's prefix; TAG: name=value; USER: the end user",
  })
  scopeValue!: string | null;
  @Field(() => ModelScopeEnum, { nullable: true, description: 'only tasks of this model, family or kind count' })
  modelScope!: ModelScopeEnum | null;
  @Field(() => String, { nullable: true, description: 'the model id, family or kind (chat, image, video)' })
  modelValue!: string | null;
  @Field(() => String, {
    nullable: true,
    description:
      'EACH_USER: the user nearest the limit, whose balance spent/held/remaining report (every user: `users`)',
  })
  user!: string | null;
  @Field(() => DecimalValue) limit!: Decimal;
  @Field(() => DecimalValue) spent!: Decimal;
  @Field(() => DecimalValue) held!: Decimal;
  @Field(() => DecimalValue, {
    description:
      'of held: the holds of tasks under review (unknown outcome, in flight too long), kept until they settle or are resolved',
  })
  heldUnderReview!: Decimal;
  @Field(() => DecimalValue, { description: 'limit − spent − held (negative after an overrun by settled usage)' })
  remaining!: Decimal;
  @Field(() => [Int]) thresholds!: number[];
  @Field(() => DateTimeScalar, { nullable: true }) periodStart!: Date | null;
  @Field(() => DateTimeScalar, { nullable: true }) periodEnd!: Date | null;
  @Field({ description: '(spent + held) / limit × 100, rounded half-even to 2 places (display)' }) percentUsed!: string;
  @Field(() => DecimalValue, {
    nullable: true,
    description:
      'spent at period end if the burn rate so far continues (spent × period length / elapsed), 6 places; null for LIFETIME',
  })
  projectedSpend!: Decimal | null;
}
