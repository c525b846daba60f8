/**
 * Every operation the tester generates, weighted as a workload would have them (an operation
 * listed twice comes twice as often): fast-check's `fc.commands`, each command wrapped so the
 * invariants run after it.
 */
import fc from 'fast-check';
import { ChatOutcome, ChatSubmit } from './chat-commands.js';
import {
  bodyArb,
  Burst,
  cents,
  Checked,
  Poll,
  RestartDatabase,
  RestartGateway,
  Submit,
  VendorOutcome,
  type Cmd,
  type Env,
} from './commands.js';
import { DeleteBudget, SetBudget } from './budget-commands.js';
import { LateSettle, PastTask } from './past-commands.js';
import { Adjust, LostAnswer, Resolve, VendorRefuses } from './review-commands.js';
import { Commit, ContractedWhileRunning, PublishContract, PublishPrices } from './terms-commands.js';
import { contractOf, TERM_SLOTS } from './contract-model.js';
import { DeleteLimit, MinuteTurn, SetLimit, TokensCorrected } from './limit-commands.js';
import {
  ArchivedBudgetSpend,
  ArchivedLateItem,
  ArchiveOlder,
  CloseMonth,
  ReopenMonth,
  RestoreOlder,
  type Which,
} from './month-commands.js';
import { PollerRound, TimerRound } from './poller-commands.js';
import { StreamedChat, type StreamEnd } from './stream-commands.js';
import { SetRate } from './rate-commands.js';
import type { LimitKind, LimitScope } from './limits-model.js';
import {
  BilledLater,
  Decide,
  HostileStatement,
  ImportStatement,
  LINE_MINUTES,
  Rebill,
  StatementOfArchivedMonth,
} from './statement-commands.js';
import { unitOfPart, type Part, type Scope, type Unit } from './catalog-model.js';
import type { Period } from './money-model.js';
import type { Real } from './real.js';
import {
  AcceptOnBoth,
  AsRole,
  DisputeTwice,
  ForgottenTask,
  ReclosedCommitment,
  RepricedWhileRunning,
  ReviewedChat,
} from './scenarios.js';
import { KillMidSubmission } from './kill-commands.js';
import type { Server } from './system.js';

const PARTS: Part[] = [
  { scope: 'MODEL', value: 'seedream-4.0' },
  { scope: 'MODEL', value: 'claude-sonnet-5' },
  { scope: 'FAMILY', value: 'sora' },
  { scope: 'FAMILY', value: 'wan' },
  { scope: 'FAMILY', value: 'gpt-5.6' },
  { scope: 'KIND', value: 'image' },
  { scope: 'KIND', value: 'video' },
  { scope: 'KIND', value: 'chat' },
];

export function commandsArb(
  server: Server | null,
  maxCommands: number,
  after: (env: Env, real: Real, what: string) => Promise<void>,
  replayPath?: string,
): fc.Arbitrary<Iterable<Cmd>> {
  const at = fc.integer({ min: 0, max: 1 });
  const project = fc.integer({ min: 0, max: 1 });
  const pick = fc.nat(50);
  const user = fc.integer({ min: 0, max: 2 });
  const which = fc.constantFrom<Which>('last month', 'last month', 'month before last');
  const idempotencyKey = fc.option(fc.constantFrom('k1', 'k2'), { freq: 3 });
  const seedreamRates = fc.tuple(
    fc.constantFrom('0.040', '0.045', '0.050'),
    fc.constantFrom('0.060', '0.065'),
    fc.constantFrom('0.070', '0.080'),
  );
  // A contract (§19): some of the slots' terms, each with one of its figures (exact amounts of many decimals), or none.
  const terms = fc
    .option(fc.tuple(...TERM_SLOTS.map((slot) => fc.option(fc.constantFrom(...slot.figures), { freq: 2 }))), {
      freq: 4,
    })
    .map(contractOf);
  const contract = terms.map((t) => new PublishContract(t));
  // Finance's rates (§19): a credit price, or EUR or JPY per USD, from this month or last.
  const rate = fc.oneof(
    fc
      .tuple(fc.boolean(), fc.constantFrom('0.00106', '0.001', '0.0012'))
      .map(([last, p]) => new SetRate('CREDIT', last, p)),
    fc.tuple(fc.boolean(), fc.constantFrom('0.9213', '0.87', '1.0405')).map(([last, r]) => new SetRate('EUR', last, r)),
    fc.tuple(fc.boolean(), fc.constantFrom('156.23', '149', '0.5')).map(([last, r]) => new SetRate('JPY', last, r)),
  );
  const commitment = fc.constantFrom('0.5', '2', '40').map((a) => new Commit(a));
  const submit = fc
    .tuple(at, project, bodyArb, user, fc.integer({ min: 0, max: 1 }), idempotencyKey)
    .map(([a, p, b, u, t, k]) => new Submit(a, p, b, u, t, k));
  const chat = fc
    .tuple(
      at,
      project,
      fc.constantFrom('claude-sonnet-5' as const, 'gpt-5.6-luna' as const),
      fc.integer({ min: 1, max: 400 }),
      fc.constantFrom(16, 256, 4096),
      user,
    )
    .map(([a, p, m, w, x, u]) => new ChatSubmit(a, p, m, w, x, u));
  const adjust = fc
    .tuple(
      fc.integer({ min: 0, max: 2 }),
      cents(-150, 150).filter((d) => !d.isZero()),
      fc.option(fc.nat(20)),
      fc.constantFrom('now' as const, 'last month' as const, 'month before last' as const, '1970' as const),
      fc.boolean(),
    )
    .map(([p, a, t, w, c]) => new Adjust(p, a, t, w, c));
  const setBudget = fc
    .tuple(
      project,
      fc.constantFrom<Period>('MONTHLY', 'LIFETIME', 'DAILY', 'WEEKLY'),
      fc.constantFrom<Scope>('PROJECT', 'PROJECT', 'USER', 'TAG', 'API_KEY', 'EACH_USER'),
      cents(5, 300),
      fc.boolean(),
      fc.constantFrom<Unit>('USD', 'USD', 'CREDITS'),
      // On part of the catalog (§20): one model, family or kind; in the other unit, refused.
      fc.option(fc.constantFrom(...PARTS), { freq: 2 }),
    )
    .map(([p, per, s, l, h, u, part]) => new SetBudget(p, per, s, u === 'CREDITS' ? l.times(10) : l, h, u, part));
  const setLimit = fc
    .tuple(
      project,
      fc.constantFrom<LimitKind>('TASKS_IN_FLIGHT', 'REQUESTS_PER_MINUTE', 'TOKENS_PER_MINUTE'),
      fc.constantFrom<LimitScope>('PROJECT', 'USER', 'EACH_USER'),
      fc.integer({ min: 1, max: 4 }),
    )
    // A minute's amount doubled: a few requests a minute would leave the rest of a sequence refused.
    // Tokens: a chat here is estimated at 20 to ~5,000 (its words, max_tokens 16, 256 or 4096).
    .map(
      ([p, k, s, n]) =>
        new SetLimit(p, k, s, { TASKS_IN_FLIGHT: n, REQUESTS_PER_MINUTE: 2 * n, TOKENS_PER_MINUTE: 2_500 * n }[k]),
    );
  const resolve = fc
    .tuple(pick, fc.constantFrom('CHARGE' as const, 'RELEASE' as const), fc.option(cents(0, 200), { freq: 2 }))
    .map(([i, o, a]) => new Resolve(i, o, a));
  const decide = fc.tuple(pick, fc.boolean()).map(([i, a]) => new Decide(i, a));
  const guarded = fc.oneof(
    adjust,
    setBudget,
    resolve,
    decide,
    pick.map((i) => new DeleteBudget(i)),
    setLimit,
    pick.map((i) => new DeleteLimit(i)),
    which.map((w) => new CloseMonth(w)),
    which.map((w) => new ReopenMonth(w)),
    seedreamRates.map((r) => new PublishPrices(r)),
    contract,
    rate,
  );
  const ops: Array<fc.Arbitrary<Cmd>> = [
    submit,
    submit,
    chat,
    chat,
    fc
      .tuple(
        chat,
        fc.constantFrom<StreamEnd>('usage', 'usage', 'no_usage', 'cut', 'cut_unnamed', 'left'),
        fc.constantFrom('within' as const, 'within' as const, 'overrun' as const, 'long-context' as const),
      )
      .map(([c, e, f]) => new StreamedChat(c, e, f)),
    fc.tuple(project, bodyArb, fc.integer({ min: 2, max: 12 })).map(([p, b, n]) => new Burst(p, b, n)),
    fc
      .tuple(
        pick,
        fc.constantFrom('ready' as const, 'ready' as const, 'failed' as const, 'stall' as const, 'forget' as const),
      )
      .map(([i, f]) => new VendorOutcome(i, f)),
    fc
      .tuple(
        pick,
        fc.constantFrom(
          'within' as const,
          'within' as const,
          'overrun' as const,
          'long-context' as const,
          'no-usage' as const,
        ),
        fc.integer({ min: 0, max: 9 }),
      )
      .map(([i, f, c]) => new ChatOutcome(i, f, c)),
    fc.tuple(at, pick).map(([a, i]) => new Poll(a, i)),
    fc.tuple(at, pick).map(([a, i]) => new Poll(a, i)),
    fc.tuple(pick, fc.integer({ min: 1, max: 4 }), at).map(([i, n, a]) => new ForgottenTask(i, n, a)),
    at.map((a) => new PollerRound(a)),
    at.map((a) => new PollerRound(a)),
    at.map((a) => new TimerRound(a)),
    fc.tuple(at, project, bodyArb).map(([a, p, b]) => new LostAnswer(a, p, b)),
    fc.tuple(at, project, bodyArb).map(([a, p, b]) => new VendorRefuses(a, p, b)),
    resolve,
    fc
      .tuple(
        at,
        fc.constantFrom('claude-sonnet-5' as const, 'gpt-5.6-luna' as const),
        fc.constantFrom('overrun' as const, 'no-usage' as const),
        fc.constantFrom('CHARGE' as const, 'CHARGE' as const, 'RELEASE' as const),
        fc.option(cents(0, 300), { freq: 2 }),
      )
      .map(([a, m, f, o, x]) => new ReviewedChat(a, m, f, o, o === 'CHARGE' ? x : null)),
    adjust,
    setBudget,
    pick.map((i) => new DeleteBudget(i)),
    setLimit,
    setLimit,
    pick.map((i) => new DeleteLimit(i)),
    fc.tuple(project, fc.integer({ min: 1, max: 4 }), bodyArb).map(([p, n, b]) => new MinuteTurn(p, n, b)),
    fc
      .tuple(
        fc.constantFrom(1_500, 6_000, 12_000),
        chat,
        fc.constantFrom('within' as const, 'overrun' as const, 'no-usage' as const),
      )
      .map(([n, c, f]) => new TokensCorrected(n, c, f)),
    fc.tuple(bodyArb, fc.boolean(), fc.boolean(), fc.boolean()).map(([b, s, o, a]) => new PastTask(b, s, o, a)),
    pick.map((i) => new LateSettle(i)),
    seedreamRates.map((r) => new PublishPrices(r)),
    contract,
    rate,
    commitment,
    fc
      .tuple(
        fc.constantFrom('0.5', '2', '40'),
        cents(-150, 150).filter((d) => !d.isZero()),
      )
      .map(([a, late]) => new ReclosedCommitment(a, late)),
    fc
      .tuple(
        terms,
        terms,
        fc.oneof(chat, chat, submit),
        fc.constantFrom('within' as const, 'overrun' as const, 'long-context' as const, 'no-usage' as const),
      )
      .map(([first, then, task, fate]) => new ContractedWhileRunning(first, then, task, fate)),
    fc
      .tuple(at, project, fc.constantFrom('1K', '2K', '4K'), fc.integer({ min: 1, max: 3 }), seedreamRates)
      .map(([a, p, r, n, rates]) => new RepricedWhileRunning(a, p, r, n, rates)),
    which.map((w) => new CloseMonth(w)),
    which.map((w) => new ReopenMonth(w)),
    fc.boolean().map((again) => new ArchiveOlder(again)),
    fc.constant(new RestoreOlder()),
    fc.tuple(bodyArb, fc.boolean(), fc.boolean()).map(([b, first, a]) => new ArchivedLateItem(b, first, a)),
    fc
      .tuple(
        cents(-150, 150).filter((d) => !d.isZero()),
        fc.constantFrom<Unit>('USD', 'CREDITS'),
        // On part of the catalog in USD: the month's task is an image (seedream-4.0).
        fc.option(fc.constantFrom(...PARTS.filter((p) => unitOfPart(p) === 'USD')), { freq: 2 }),
        fc.constantFrom('LIFETIME' as const, 'DAILY' as const, 'WEEKLY' as const),
      )
      .map(
        ([a, u, p, per]) => new ArchivedBudgetSpend(u === 'CREDITS' ? a.times(10) : a, u, u === 'USD' ? p : null, per),
      ),
    fc
      .tuple(
        fc.array(pick, { minLength: 1, maxLength: 5 }),
        fc.array(fc.constantFrom(0, 0, 1, -1), { minLength: 1, maxLength: 5 }),
        fc.boolean(),
        fc.constantFrom(...LINE_MINUTES),
      )
      .map(([p, d, f, minute]) => new ImportStatement(p, d, f, minute)),
    fc.tuple(pick, fc.constantFrom(0, 0, 1, -1)).map(([i, c]) => new Rebill(i, c)),
    fc.tuple(pick, pick).map(([a, b]) => new BilledLater(a, b)),
    fc.tuple(pick, fc.constantFrom(1, -1, 3), fc.constantFrom(1, -2, 5)).map(([i, a, b]) => new DisputeTwice(i, a, b)),
    fc.constantFrom('0.000000000000000001', '999999999999').map((s) => new HostileStatement(s)),
    fc.integer({ min: 0, max: 3 }).map((n) => new StatementOfArchivedMonth(n)),
    decide,
    fc.tuple(pick, fc.constant(true)).map(([i, a]) => new Decide(i, a)),
    pick.map((i) => new AcceptOnBoth(i)),
    fc
      .tuple(fc.constantFrom('FINANCE' as const, 'LEAD' as const, 'VIEWER' as const), guarded)
      .map(([r, c]) => new AsRole(r, c)),
    fc.constant(new RestartGateway()),
    fc
      .tuple(project, bodyArb, fc.boolean(), fc.constantFrom('k1' as const, 'k2' as const))
      .map(([p, b, v, k]) => new KillMidSubmission(p, b, v, k)),
  ];
  if (server) ops.push(fc.constant(new RestartDatabase(server)));
  return fc.commands(
    ops.map((op) => op.map((c) => new Checked(c, after))),
    { maxCommands, size: 'large', ...(replayPath ? { replayPath } : {}) },
  );
}
