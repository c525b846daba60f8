/**
 * One gateway per DATA_DIR (docs/operations.md): the sandbox's simulator journal and the embedded
 * PostgreSQL live there, and a second `npm start` on the same directory rewrote the journal before
 * it died on the taken port. The first gateway holds DATA_DIR/gateway.pid; a second one finds it
 * held by a live process and refuses before touching anything. A file left by a gateway that
 * died is taken over.
 */
import { mkdirSync, openSync, readFileSync, rmSync, writeSync, closeSync } from 'node:fs';
import path from 'node:path';

export class StartRefused extends Error {}

export interface DataDirLock {
  release(): void;
}

export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, 'gateway.pid');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return { release: () => rmSync(file, { force: true }) };
    } catch (error) {
      if ((error as { code?: string }).code !== 'EEXIST') throw error;
      const pid = Number(readFileSync(file, 'utf8').trim());
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
        throw new StartRefused(
          `another spendgate gateway (pid ${pid}) is running with DATA_DIR ${dataDir}: stop it first, or start this one with another DATA_DIR and PORT`,
        );
      }
      rmSync(file, { force: true }); // left by a gateway that is gone
    }
  }
  throw new StartRefused(`could not take ${file}`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === 'EPERM';
  }
}
