/**
 * Contracts over GraphQL (decisions §19): finance publishes the terms a new price-book version
 * carries; `priceBook { contract }` shows them beside the list rates.
 */
import { Args, Context, Field, InputType, Int, Mutation, Resolver } from '@nestjs/graphql';
import { ChangesService } from '../audit/changes.service.js';
import { Callers, type CallContext } from '../auth/callers.js';
import { cleanText } from '../common/text.js';
import { DateTimeScalar } from '../graphql/scalars.js';
import { UnitEnum } from '../graphql/graphql.types.js';
import { termView } from '../pricing/contract-rows.js';
import { PriceBookService } from '../pricing/price-book.service.js';
import { checkContract } from './contract-terms.js';

@InputType()
export class ContractTermInput {
  @Field({ description: 'model | family | kind' }) scope!: string;
  @Field({ description: 'the model id, the family (e.g. gpt-5.6) or the kind (chat, video, image)' }) value!: string;
  @Field(() => UnitEnum) unit!: UnitEnum;
  @Field(() => String, { nullable: true, description: 'percent off the list rate, "0" to "100" (a decimal string)' })
  discountPercent?: string | null;
  @Field(() => String, {
    nullable: true,
    description: 'net rate only: the charge line it prices (output, images:2K, video_seconds:720p, request:15s)',
  })
  component?: string | null;
  @Field(() => String, {
    nullable: true,
    description: 'net rate only: one token tier (base, long); omitted: every tier',
  })
  tier?: string | null;
  @Field(() => String, {
    nullable: true,
    description: 'the contracted rate, in the list rate’s terms (per 1M tokens, per second, request or image)',
  })
  netRate?: string | null;
}

@Resolver()
export class ContractsResolver {
  constructor(
    private readonly books: PriceBookService,
    private readonly callers: Callers,
    private readonly changes: ChangesService,
  ) {}

  @Mutation(() => Int, {
    description:
      'publishes the contract: a new price-book version effective at `effectiveAt` (now or later; omitted: now) with these terms ' +
      'as the whole contract and every list rate carried over (an empty list ends the contract). Tasks accepted from then on ' +
      'are held and charged at the contracted rates; a task keeps the version it was accepted under',
  })
  async publishContract(
    @Context() ctx: CallContext,
    @Args('terms', { type: () => [ContractTermInput] }) terms: ContractTermInput[],
    @Args('effectiveAt', { type: () => DateTimeScalar, nullable: true }) effectiveAt?: Date,
    @Args('note', { nullable: true }) note?: string,
  ) {
    const who = await this.callers.of(ctx);
    const contract = checkContract(terms, this.books.inForce());
    const why = note === undefined || note === null ? undefined : cleanText('note', note, 500, { multiline: true });
    return this.changes.run(
      who,
      ctx.client,
      (version: number) => ({
        action: 'contract.publish',
        targetKind: 'price-book-version',
        targetId: String(version),
        after: { effectiveAt: effectiveAt ?? 'now', note: why ?? null, terms: contract.map(termView) },
      }),
      () => this.books.publish(effectiveAt ?? undefined, [], why, contract),
    );
  }
}
