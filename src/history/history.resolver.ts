/** archivedMonths (decisions §18): the months archived to Parquet; rights from permissions.ts. */
import { Context, Field, Int, ObjectType, Query, Resolver } from '@nestjs/graphql';
import { Callers, type CallContext } from '../auth/callers.js';
import { DateTimeScalar } from '../graphql/scalars.js';
import { ArchiveService } from './archive.service.js';

@ObjectType({ description: "one of an archived month's files" })
export class ArchiveDigest {
  @Field({ description: 'tasks.parquet, charge_lines.parquet, ledger_entries.parquet or costs.parquet (FOCUS 1.2)' })
  file!: string;
  @Field(() => Int)
  rows!: number;
  @Field({ description: "SHA-256 of the file's bytes, hex (as in its manifest.json)" })
  sha256!: string;
}

@ObjectType({ description: 'a closed month whose tasks, charge lines and ledger entries were archived to Parquet' })
export class ArchivedMonth {
  @Field({ description: 'YYYY-MM' })
  month!: string;
  @Field(() => DateTimeScalar)
  archivedAt!: Date;
  @Field({ description: 'who ran `spendgate archive`' })
  archivedBy!: string;
  @Field(() => Int, { description: 'tasks in its files' })
  tasks!: number;
  @Field(() => Int, { description: 'ledger entries in its files' })
  ledgerEntries!: number;
  @Field(() => Int, { description: 'tasks kept in the database: open when archived, or posted to later' })
  keptTasks!: number;
  @Field(() => Int, { description: 'rows in its files' })
  rows!: number;
  @Field(() => [ArchiveDigest])
  digests!: ArchiveDigest[];
  @Field({ description: "its files' directory under ARCHIVE_DIR" })
  directory!: string;
}

@Resolver()
export class HistoryResolver {
  constructor(
    private readonly archives: ArchiveService,
    private readonly callers: Callers,
  ) {}

  @Query(() => [ArchivedMonth], {
    description: 'every archived month, newest first (`spendgate archive restore` brings one back)',
  })
  async archivedMonths(@Context() ctx: CallContext) {
    await this.callers.of(ctx);
    return this.archives.list();
  }
}
