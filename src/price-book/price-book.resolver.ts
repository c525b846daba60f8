import { ChangesService } from '../audit/changes.service.js';
import { DateTimeScalar } from '../graphql/scalars.js';
import { graphqlRefusal } from '../common/error.filter.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { Args, Context, Field, InputType, Int, Mutation, Query, Resolver } from '@nestjs/graphql';
import { cleanText } from '../common/text.js';
import { PriceBookService } from '../pricing/price-book.service.js';
import type { RateComponent } from '../pricing/price-book.js';
import { PriceBook, PriceBookVersionInfo, UnitEnum } from '../graphql/graphql.types.js';

@InputType()
export class PriceRateInput {
  @Field() model!: string;
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field({ description: 'token | second | request | image' }) component!: string;
  @Field({ description: 'token class, resolution, or duration in seconds' }) key!: string;
  @Field({ description: 'decimal string: per 1M tokens, per second, per request or per image' }) rate!: string;
  @Field(() => String, { nullable: true }) tier?: string;
  @Field(() => Int, { nullable: true }) tierMaxInput?: number;
}

const COMPONENTS = new Set(['token', 'second', 'request', 'image']);

@Resolver()
export class PriceBookResolver {
  constructor(
    private readonly books: PriceBookService,
    private readonly callers: Callers,
    private readonly changes: ChangesService,
  ) {}

  @Query(() => [PriceBookVersionInfo])
  async priceBookVersions(@Context() ctx: CallContext) {
    await this.callers.of(ctx);
    return this.books.all().map((b) => ({ version: b.version, effectiveAt: b.effectiveAt }));
  }

  @Query(() => PriceBook, {
    nullable: true,
    description: 'a price-book version with its rates; the one in force now when version is omitted',
  })
  async priceBook(@Context() ctx: CallContext, @Args('version', { type: () => Int, nullable: true }) version?: number) {
    await this.callers.of(ctx);
    return this.books.describe(version ?? this.books.inForce().version);
  }

  @Mutation(() => Int, {
    description:
      'publishes a new price-book version effective at `effectiveAt` (now or later; omitted: now); models listed get these rates, others carry over. ' +
      'Every instance prices with it from that moment (holds check the version in force in the database)',
  })
  async publishPrices(
    @Context() ctx: CallContext,
    @Args('rates', { type: () => [PriceRateInput] }) rates: PriceRateInput[],
    @Args('effectiveAt', { type: () => DateTimeScalar, nullable: true }) effectiveAt?: Date,
    @Args('note', { nullable: true }) note?: string,
  ) {
    const who = await this.callers.of(ctx);
    for (const r of rates) {
      if (!COMPONENTS.has(r.component))
        throw graphqlRefusal(
          `rates.component: "${r.component}" must be token, second, request or image`,
          'BAD_USER_INPUT',
        );
    }
    const rows = rates.map((r) => ({
      ...r,
      component: r.component as RateComponent,
      tierMaxInput: r.tierMaxInput ?? null,
    }));
    const why = note === undefined || note === null ? undefined : cleanText('note', note, 500, { multiline: true });
    return this.changes.run(
      who,
      ctx.client,
      (version: number) => ({
        action: 'prices.publish',
        targetKind: 'price-book-version',
        targetId: String(version),
        after: { effectiveAt: effectiveAt ?? 'now', note: why ?? null, rates: rows },
      }),
      () => this.books.publish(effectiveAt ?? undefined, rows, why),
    );
  }
}
