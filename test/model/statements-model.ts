/**
 * The vendor's statements as the money model knows them (decisions §14): each line classed against
 * the task's net as it stands, the items a person accepts or disputes, and what accepting one posts.
 */
import { Decimal } from 'decimal.js';
import { inFlight } from './limits-model.js';
import type { MoneyModel, Task } from './money-model.js';

export type ItemClass =
  'amount_differs' | 'billed_again' | 'billed_not_ours' | 'ours_not_billed' | 'duplicate' | 'pending';
export interface Item {
  statement: number;
  class: ItemClass;
  vendorTaskId: string;
  task: Task | null;
  theirs: Decimal | null;
  state: 'open' | 'accepted' | 'disputed';
}

export interface StatementLine {
  vendorTaskId: string;
  at: string;
  amount: Decimal;
}

export class StatementsModel {
  /** every statement line held (file order), and the items */
  readonly lines: Array<StatementLine & { statement: number }> = [];
  readonly items: Item[] = [];
  /** statements imported so far: the last one's number */
  count = 0;

  constructor(private readonly books: MoneyModel) {}

  /** Whether an open vendor difference that puts its task under review names `task` (§14). */
  namesOpenDifference(task: Task): boolean {
    return this.items.some(
      (i) => i.task === task && i.state === 'open' && ['amount_differs', 'billed_again', 'pending'].includes(i.class),
    );
  }

  /**
   * A statement imported (§14): rows an earlier statement holds as they are are skipped; each line
   * is classed against the net as it stands; settled tasks of the statement's days that no
   * statement bills are ours_not_billed (once), and an earlier such item whose task it bills is
   * closed. Returns the classes made.
   */
  import(lines: StatementLine[]): ItemClass[] {
    const statement = ++this.count;
    const fresh = lines.filter(
      (l) => !this.lines.some((o) => o.vendorTaskId === l.vendorTaskId && o.at === l.at && o.amount.eq(l.amount)),
    );
    const billedBefore = new Set(this.lines.map((l) => l.vendorTaskId));
    const counts = new Map<string, number>();
    for (const l of fresh) counts.set(l.vendorTaskId, (counts.get(l.vendorTaskId) ?? 0) + 1);
    const made: Item[] = [];
    const seen = new Set<string>();
    for (const l of fresh) {
      const task = this.books.byRef(l.vendorTaskId) ?? null;
      const theirs = fresh
        .filter((x) => x.vendorTaskId === l.vendorTaskId)
        .reduce((s, x) => s.plus(x.amount), new Decimal(0));
      let cls: ItemClass | 'matched';
      if ((counts.get(l.vendorTaskId) ?? 0) > 1) cls = 'duplicate';
      else if (!task) cls = 'billed_not_ours';
      else if (billedBefore.has(l.vendorTaskId)) cls = 'billed_again';
      else if (inFlight(task)) cls = 'pending';
      else cls = this.books.net(task)!.eq(l.amount) ? 'matched' : 'amount_differs';
      const key = `${cls}:${l.vendorTaskId}`;
      if (cls !== 'matched' && !seen.has(key))
        made.push({ statement, class: cls, vendorTaskId: l.vendorTaskId, task, theirs, state: 'open' });
      seen.add(key);
    }
    for (const l of fresh) this.lines.push({ ...l, statement });
    // Ours, never billed: accepted within the statement's days (from its first new line's to its
    // last's), its outcome in the books (settled, or an unknown resolved) with a net, no statement
    // bills it, not listed before.
    if (fresh.length) {
      const billed = new Set(this.lines.map((l) => l.vendorTaskId));
      const days = fresh.map((l) => l.at.slice(0, 10)).sort();
      for (const t of this.books.tasks) {
        const net = this.books.net(t);
        if (
          t.acceptedDay < days[0]! ||
          t.acceptedDay > days.at(-1)! ||
          !/^\d+$/.test(t.ref) ||
          inFlight(t) ||
          !net ||
          net.isZero() ||
          billed.has(t.ref)
        )
          continue;
        if (this.items.some((i) => i.task === t && i.class === 'ours_not_billed')) continue;
        made.push({ statement, class: 'ours_not_billed', vendorTaskId: t.ref, task: t, theirs: null, state: 'open' });
      }
    }
    // An earlier "ours, not billed" whose task a statement now bills is closed: nothing taken back.
    const billedNow = new Set(this.lines.map((l) => l.vendorTaskId));
    for (const i of this.items)
      if (i.class === 'ours_not_billed' && i.state === 'open' && billedNow.has(i.vendorTaskId)) i.state = 'accepted';
    this.items.push(...made);
    return made.map((i) => i.class);
  }

  /** Taking the vendor's figure: the task's net brought to it, by what remains (§14). */
  accept(item: Item): void {
    item.state = 'accepted';
    if (!item.task || !['amount_differs', 'billed_again', 'pending', 'ours_not_billed'].includes(item.class)) return;
    const target = item.class === 'ours_not_billed' ? new Decimal(0) : item.theirs!;
    const delta = target.minus(this.books.net(item.task) ?? 0);
    if (!delta.isZero()) this.books.adjust(item.task.project, item.task.unit, delta, item.task.acceptedDay, item.task);
  }

  /** Whether an item can be taken now (a pending item's task must have settled or been resolved). */
  acceptable(item: Item): boolean {
    if (item.state !== 'open') return false;
    return !(item.task && inFlight(item.task) && item.class !== 'billed_not_ours' && item.class !== 'duplicate');
  }

  /** After a resolution: open items whose figure the task's net now equals are closed (§14). */
  afterResolution(task: Task): void {
    const net = this.books.net(task);
    for (const i of this.items) {
      if (
        i.task !== task ||
        i.state !== 'open' ||
        !['amount_differs', 'billed_again', 'pending', 'ours_not_billed'].includes(i.class)
      )
        continue;
      const figure = i.class === 'ours_not_billed' ? new Decimal(0) : i.theirs!;
      if (net && figure.eq(net)) i.state = 'accepted';
    }
  }
}
