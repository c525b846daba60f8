/** Years of history (decisions §18): archived months over GraphQL (archivedMonths); the CLI archives and restores. */
import { Module } from '@nestjs/common';
import { ChangesService } from '../audit/changes.service.js';
import { AuthModule } from '../auth/auth.module.js';
import { CONFIG, type Config } from '../config/config.js';
import { DATABASE, type Database } from '../database/database.js';
import { ArchiveService, archiveOptions } from './archive.service.js';
import { HistoryResolver } from './history.resolver.js';

@Module({
  imports: [AuthModule],
  providers: [
    {
      provide: ArchiveService,
      inject: [DATABASE, ChangesService, CONFIG],
      useFactory: (db: Database, changes: ChangesService, config: Config) =>
        new ArchiveService(db, changes, archiveOptions(config)),
    },
    HistoryResolver,
  ],
})
export class HistoryModule {}
