/**
 * The tester starts no sequence within two minutes of a UTC day's end (clock.ts, §16): the model is
 * built for one day and month, and CI runs at any hour, the last of a month's included.
 */
import { TURN_MARGIN_MS, waitForDayTurn } from './clock.js';

const at = (iso: string) => Date.parse(iso);

test('a sequence near midnight waits until just past it; any other starts at once', () => {
  expect(waitForDayTurn(at('2026-11-30T23:59:00Z'))).toBe(62_000);
  expect(waitForDayTurn(at('2026-11-30T23:58:00.001Z'))).toBe(121_999);
  expect(waitForDayTurn(at('2026-11-30T23:58:00Z'))).toBe(0); // exactly the margin before: on one day
  expect(waitForDayTurn(at('2026-12-01T00:00:00Z'))).toBe(0); // midnight itself is the new day
  expect(waitForDayTurn(at('2026-12-04T09:30:00Z'))).toBe(0);
  expect(TURN_MARGIN_MS).toBe(120_000);
});
