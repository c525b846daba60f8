/**
 * The import of `spendgate vendor import`, in a worker thread whose young generation is capped
 * (see vendor.ts): reads the file as a stream and answers the reconciliation, or the refusal's
 * message (an ApiError's own words; anything else as it is).
 */
import { createReadStream } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { AuditService } from '../../audit/audit.service.js';
import { ChangesService } from '../../audit/changes.service.js';
import { ApiError } from '../../common/api-error.js';
import { ReconciliationService } from '../../vendor-statements/reconciliation.service.js';
import type { ColumnMapping } from '../../vendor-statements/statement-format.js';
import { cliActor, withDatabase } from '../cli-support.js';

const { file, mapping } = workerData as { file: string; mapping: ColumnMapping[] | undefined };
try {
  const result = await withDatabase((db) => {
    const { actor, client } = cliActor();
    return new ReconciliationService(db, new ChangesService(db, new AuditService(db))).import(
      createReadStream(file),
      mapping,
      actor,
      client,
      (actor as { label: string }).label,
    );
  });
  parentPort!.postMessage({ result });
} catch (error) {
  parentPort!.postMessage({
    refused: error instanceof ApiError,
    message: error instanceof ApiError ? error.message : ((error as Error).stack ?? String(error)),
  });
}
