export default async function globalTeardown() {
  await globalThis.__SPENDGATE_PG__?.stop();
}
