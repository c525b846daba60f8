/**
 * Every validation rule of the vendor's API (upstream-api.md, decisions §2), through the real HTTP edge: each bad input
 * is a 400 in the one
 * error shape, naming the field and the reason, and writes nothing to the database.
 */
import type { Gateway } from '../../src/bootstrap.js';
import { freshDatabase, gateway, http, projectWithKey, sql, submitChat, submitGeneration } from '../support/harness.js';

let gw: Gateway;
let key: string;
const user = [{ role: 'user', content: 'hi' }];

beforeAll(async () => {
  gw = await gateway(await freshDatabase());
  ({ key } = await projectWithKey(gw));
});
afterAll(() => gw.close());

const chatCases: Array<[string, Record<string, unknown>, string, RegExp]> = [
  [
    'unknown model, listing the allowed ones',
    { model: 'gpt-9', messages: user },
    'model',
    /unknown model "gpt-9"; one of: claude-sonnet-5, .*gpt-5.6-sol/,
  ],
  ['missing messages', { model: 'glm-5.3' }, 'messages', /is required/],
  [
    'temperature on claude-opus-4-8',
    { model: 'claude-opus-4-8', messages: user, temperature: 1 },
    'temperature',
    /not offered by claude-opus-4-8/,
  ],
  [
    'thinking on a Gemini route',
    { model: 'gemini-3.8-flash', messages: user, thinking: { type: 'adaptive' } },
    'thinking',
    /not offered/,
  ],
  [
    'temperature 0.7 where 0, 0.5, 1, 2 are shown',
    { model: 'glm-5.3', messages: user, temperature: 0.7 },
    'temperature',
    /0.7 is not allowed on glm-5.3; allowed: 0, 0.5, 1, 2/,
  ],
  [
    'more than 10 images',
    {
      model: 'gemini-3.7-flash',
      messages: [
        {
          role: 'user',
          content: Array.from({ length: 11 }, () => ({
            type: 'image_url',
            image_url: { url: 'https://x.test/a.png' },
          })),
        },
      ],
    },
    'messages',
    /11 images; .* at most 10/,
  ],
  [
    'more than one video',
    {
      model: 'gemini-3.7-flash',
      messages: [
        {
          role: 'user',
          content: [1, 2].map(() => ({ type: 'video_url', video_url: { url: 'https://x.test/v.mp4' } })),
        },
      ],
    },
    'messages',
    /2 videos; .* at most 1/,
  ],
  [
    'a non-HTTPS media URL',
    {
      model: 'gemini-3.6-flash',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'http://x.test/a.png' } }] }],
    },
    'messages[0].content[0].image_url.url',
    /HTTPS/,
  ],
  [
    'content arrays on a non-Gemini route',
    { model: 'glm-5.3', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] },
    'messages[0].content',
    /only offered on Gemini-family routes/,
  ],
  [
    'reasoning_effort conflicting with output_config.effort',
    { model: 'claude-sonnet-5', messages: user, reasoning_effort: 'low', output_config: { effort: 'max' } },
    'reasoning_effort',
    /alias of output_config.effort and conflicts/,
  ],
  [
    'an effort outside the list',
    { model: 'claude-opus-5', messages: user, output_config: { effort: 'extreme' } },
    'output_config.effort',
    /one of: low, medium, high, xhigh, max/,
  ],
  ['max_tokens not an integer', { model: 'glm-5.3', messages: user, max_tokens: 10.5 }, 'max_tokens', /integer/],
  [
    'a video model on the chat path',
    { model: 'veo-3.1', messages: user },
    'model',
    /video route; submit it to \/api-platform\/v1\/generations/,
  ],
  ['empty messages', { model: 'glm-5.3', messages: [] }, 'messages', /at least one/],
];

const generationCases: Array<[string, Record<string, unknown>, string, RegExp]> = [
  ['missing prompt', { model: 'veo-3.1' }, 'prompt', /is required/],
  [
    'referenceImages on sora-2-pro',
    { model: 'sora-2-pro', prompt: 'p', referenceImages: ['https://x.test/a.png'] },
    'referenceImages',
    /not offered by sora-2-pro/,
  ],
  ['n on nano-banana-pro', { model: 'nano-banana-pro', prompt: 'p', n: 2 }, 'n', /not offered by nano-banana-pro/],
  [
    'reference_video_url on veo-3.1',
    { model: 'veo-3.1', prompt: 'p', reference_video_url: 'https://x.test/v.mp4' },
    'reference_video_url',
    /not offered/,
  ],
  [
    'generateAudio on happyhorse-1.0',
    { model: 'happyhorse-1.0', prompt: 'p', generateAudio: true },
    'generateAudio',
    /not offered/,
  ],
  [
    'duration 12 on sora-2-pro',
    { model: 'sora-2-pro', prompt: 'p', duration: 12 },
    'duration',
    /12 is not allowed on sora-2-pro; allowed: 10, 15/,
  ],
  ['duration 9 on veo-3.1', { model: 'veo-3.1', prompt: 'p', duration: 9 }, 'duration', /above the maximum 8/],
  ['duration 4.5 on minimax-h3', { model: 'minimax-h3', prompt: 'p', duration: 4.5 }, 'duration', /integer/],
  ['duration 16 on minimax-h3', { model: 'minimax-h3', prompt: 'p', duration: 16 }, 'duration', /above the maximum 15/],
  ['n 11', { model: 'seedream-4.0', prompt: 'p', n: 11 }, 'n', /above the maximum 10/],
  [
    'resolution 3K on seedream-4.0',
    { model: 'seedream-4.0', prompt: 'p', resolution: '3K' },
    'resolution',
    /"3K" is not allowed on seedream-4.0; allowed: 1K, 2K, 4K/,
  ],
  [
    'aspectRatio 21:9 on seedream-4.5',
    { model: 'seedream-4.5', prompt: 'p', aspectRatio: '21:9' },
    'aspectRatio',
    /"21:9" is not allowed/,
  ],
  [
    'last_frame_url without imageUrl',
    { model: 'veo-3.1', prompt: 'p', last_frame_url: 'https://x.test/a.png' },
    'last_frame_url',
    /paired with imageUrl/,
  ],
  ['a chat model on the generations path', { model: 'glm-5.3', prompt: 'p' }, 'model', /chat route/],
  [
    'imageUrl that is not a URL',
    { model: 'happyhorse-1.0', prompt: 'p', imageUrl: 'not a url' },
    'imageUrl',
    /absolute URL/,
  ],
];

describe('chat validation', () => {
  test.each(chatCases)('%s → 400 naming the field', async (_name, body, field, reason) => {
    const res = await submitChat(gw, key, body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe(4000);
    expect(res.body.message.startsWith(`${field}: `)).toBe(true);
    expect(
      res.body.details.problems.some(
        (p: { field: string; reason: string }) => p.field === field && reason.test(p.reason),
      ),
    ).toBe(true);
  });
});

describe('generation validation', () => {
  test.each(generationCases)('%s → 400 naming the field', async (_name, body, field, reason) => {
    const res = await submitGeneration(gw, key, body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe(4000);
    expect(
      res.body.details.problems.some(
        (p: { field: string; reason: string }) => p.field === field && reason.test(p.reason),
      ),
    ).toBe(true);
  });
});

describe('accepted where the spec shows no allowed values', () => {
  test.each([
    ['gpt-5.6-terra with any temperature', 'chat', { model: 'gpt-5.6-terra', messages: user, temperature: 0.7 }],
    [
      'claude alias equal to output_config.effort',
      'chat',
      { model: 'claude-opus-5', messages: user, reasoning_effort: 'max', output_config: { effort: 'max' } },
    ],
    [
      'gemini with 10 images and one video over HTTPS',
      'chat',
      {
        model: 'gemini-3.5-flash-lite',
        messages: [
          {
            role: 'user',
            content: [
              ...Array.from({ length: 10 }, () => ({ type: 'image_url', image_url: { url: 'https://x.test/a.png' } })),
              { type: 'video_url', video_url: { url: 'https://x.test/v.mp4' } },
              { type: 'text', text: 'describe' },
            ],
          },
        ],
      },
    ],
    [
      'minimax-h3 at 768P for 15 s',
      'generations',
      { model: 'minimax-h3', prompt: 'p', resolution: '768P', duration: 15, referenceImages: ['https://x.test/a.png'] },
    ],
    [
      'veo-3.1 with imageUrl and last_frame_url',
      'generations',
      {
        model: 'veo-3.1',
        prompt: 'p',
        resolution: '720p',
        duration: 8,
        imageUrl: 'https://x.test/a.png',
        last_frame_url: 'https://x.test/b.png',
      },
    ],
  ])('%s → 200', async (_name, path, body) => {
    const res = path === 'chat' ? await submitChat(gw, key, body) : await submitGeneration(gw, key, body);
    expect(res.status).toBe(200);
    expect(res.body.code).toBe(1000);
  });
});

test('malformed bodies are 4xx in the error shape', async () => {
  const url = `${gw.url}/api-platform/v1/generations`;
  const badJson = await http(url, { key, raw: '{"model":', headers: { 'content-type': 'application/json' } });
  expect(badJson.status).toBe(400);
  expect(badJson.body.message).toMatch(/^body: is not valid JSON/);
  const array = await http(url, { key, body: [1, 2] });
  expect(array.status).toBe(400);
  expect(array.body).toMatchObject({ code: 4000, message: 'body: must be a JSON object' });
});

test('refused submissions write no task, no hold, no ledger entry', async () => {
  const before = await sql(
    gw,
    'SELECT (SELECT count(*) FROM task) AS tasks, (SELECT count(*) FROM ledger_entry) AS entries',
  );
  await submitChat(gw, key, { model: 'claude-opus-4-8', messages: user, temperature: 1 });
  await submitGeneration(gw, key, { model: 'sora-2-pro', prompt: 'p', duration: 12 });
  const after = await sql(
    gw,
    'SELECT (SELECT count(*) FROM task) AS tasks, (SELECT count(*) FROM ledger_entry) AS entries',
  );
  expect(after).toEqual(before);
});
