/** GraphQL shapes of converted figures and rate versions (decisions §19). */
import { Field, Int, ObjectType } from '@nestjs/graphql';
import { CAPPED } from '../common/counts.js';
import { UnitEnum } from '../graphql/graphql.types.js';
import { DateTimeScalar, DecimalValue } from '../graphql/scalars.js';

@ObjectType({ description: 'a version of the credit price (currency USD) or of an FX rate' })
export class RateVersionView {
  @Field(() => Int) version!: number;
  @Field() currency!: string;
  @Field({ description: 'the first month it applies to, YYYY-MM' }) month!: string;
  @Field(() => DecimalValue, { description: 'USD per credit, or units of the currency per USD' }) rate!: string;
  @Field(() => String, { nullable: true }) note!: string | null;
  @Field(() => DateTimeScalar) publishedAt!: Date;
  @Field() publishedBy!: string;
}

@ObjectType({ description: 'a converted figure: a reading aid, never the books (those stay per unit)' })
export class ConvertedTotal {
  @Field() currency!: string;
  @Field(() => DecimalValue, { nullable: true, description: 'exact; null when a rate it needs is missing' })
  amount!: string | null;
  @Field({ description: 'says it is converted, and at which versions' }) label!: string;
  @Field(() => [String]) missing!: string[];
  @Field(() => [Int]) creditPriceVersions!: number[];
  @Field(() => [Int]) fxRateVersions!: number[];
}

@ObjectType()
export class ConvertedSpendRow {
  @Field(() => [String]) keys!: string[];
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field(() => DecimalValue, { description: 'exact, in its unit' }) amount!: string;
  @Field(() => Int, { description: CAPPED('tasksExact') }) tasks!: number;
  @Field({ description: 'tasks, exactly, in digits' }) tasksExact!: string;
  @Field(() => DecimalValue, { nullable: true, description: 'converted; null when a rate is missing' })
  converted!: string | null;
}

@ObjectType()
export class ConvertedSpend extends ConvertedTotal {
  @Field(() => [ConvertedSpendRow]) rows!: ConvertedSpendRow[];
}
