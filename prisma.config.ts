/**
 * Prisma CLI configuration. The migration engine runs on a JS driver adapter so that no native
 * engine is downloaded (see ../shared/notes/toolchain.md). The 7.x adapter is used here because
 * the 6.19 one cannot read Postgres `name` columns that the migration engine queries.
 */
import { defineConfig } from 'prisma/config';
import { PrismaPg } from '@prisma/adapter-pg-migrate';

export default defineConfig({
  schema: 'prisma/schema.prisma',
  experimental: { adapter: true },
  engine: 'js',
  async adapter() {
    const url = new URL(process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres');
    return new PrismaPg({
      host: url.hostname,
      port: Number(url.port || 5432),
      user: decodeURIComponent(url.username),
      password: decodeURIComponent(url.password),
      database: url.pathname.slice(1) || 'postgres',
    });
  },
});
