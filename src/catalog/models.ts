/**
 * The model catalog: all 22 routes of upstream-api.md, their fields, the allowed values and
 * defaults the spec shows, and the limits of its Limits table. This is the single place that
 * knows about routes; validation, pricing, the simulator and reports all read it.
 *
 * Where the spec says "not shown", the field is typed but carries no `allowed` / `default`, so a
 * well-typed value is accepted (upstream-api.md, decisions §2).
 */
import type { FieldSpec, ModelRoute } from './catalog.types.js';

const TEMPERATURE_SHOWN = [0, 0.5, 1, 2] as const;
const EFFORTS = ['low', 'medium', 'high', 'xhigh', 'max'] as const;
const VIDEO_ASPECTS = ['16:9', '9:16', '1:1', '4:3', '3:4'] as const;
const SEEDREAM_ASPECTS = ['1:1', '16:9', '9:16', '4:3', '3:4', '3:2', '2:3', '5:6', '6:5', '2:1'] as const;
const SEEDREAM5_ASPECTS = ['1:1', '16:9', '9:16', '4:3', '3:4', '3:2', '2:3', '21:9'] as const;
const NANO_ASPECTS = ['1:1', '16:9', '9:16', '4:3', '3:4'] as const;

// ---- chat -------------------------------------------------------------------------------------

const chatBase = {
  messages: { type: 'messages' },
  stream: { type: 'boolean', default: false },
} satisfies Record<string, FieldSpec>;

/**
 * The vendor shows no upper bound for max_tokens or wan2.7-video's duration; these are stated sane
 * maxima (decisions §3), far above any route's real output limit or clip, so that a
 * request cannot hold an absurd amount (max_tokens 1e308 held 2×10^305 credits).
 */
export const SANE_MAX_TOKENS = 200_000;
export const SANE_MAX_VIDEO_SECONDS = 60;

function maxTokens(defaultValue?: number): FieldSpec {
  return defaultValue === undefined
    ? { type: 'integer', min: 1, max: SANE_MAX_TOKENS }
    : { type: 'integer', min: 1, max: SANE_MAX_TOKENS, default: defaultValue };
}

function temperature(shown: boolean): FieldSpec {
  return shown ? { type: 'number', allowed: TEMPERATURE_SHOWN, default: 1 } : { type: 'number' };
}

function claude(id: string, maxTokensDefault?: number): ModelRoute {
  return {
    id,
    family: 'claude',
    kind: 'chat',
    endpoint: 'chat',
    required: ['messages'],
    usageShape: 'anthropic',
    fields: {
      ...chatBase,
      max_tokens: maxTokens(maxTokensDefault),
      thinking: { type: 'enumObject', key: 'type', allowed: ['adaptive'], default: 'adaptive' },
      output_config: { type: 'enumObject', key: 'effort', allowed: EFFORTS, default: 'high' },
      reasoning_effort: { type: 'string', allowed: EFFORTS },
    },
  };
}

function gemini(id: string, shown: boolean): ModelRoute {
  return {
    id,
    family: 'gemini',
    kind: 'chat',
    endpoint: 'chat',
    required: ['messages'],
    usageShape: 'gemini',
    fields: { ...chatBase, max_tokens: maxTokens(shown ? 4096 : undefined), temperature: temperature(shown) },
    media: {
      maxImages: 10,
      maxImageBytes: 10 * 1024 * 1024,
      maxVideos: 1,
      maxVideoBytes: 20 * 1024 * 1024,
      scheme: 'https',
    },
    unverifiableLimits: ['image size 10 MB', 'video size 20 MB'],
  };
}

function openaiStyle(id: string, family: 'glm' | 'gpt-5.6', shown: boolean): ModelRoute {
  return {
    id,
    family,
    kind: 'chat',
    endpoint: 'chat',
    required: ['messages'],
    usageShape: 'openai',
    fields: { ...chatBase, max_tokens: maxTokens(shown ? 4096 : undefined), temperature: temperature(shown) },
  };
}

// ---- video ------------------------------------------------------------------------------------

const url: FieldSpec = { type: 'url' };

function video(id: string, family: ModelRoute['family'], fields: Record<string, FieldSpec>): ModelRoute {
  const offersLastFrame = 'last_frame_url' in fields;
  return {
    id,
    family,
    kind: 'video',
    endpoint: 'generations',
    required: ['prompt'],
    fields: { prompt: { type: 'string', minLength: 1 }, ...fields },
    ...(offersLastFrame ? { pairedWith: { last_frame_url: 'imageUrl' } } : {}),
  };
}

// ---- image ------------------------------------------------------------------------------------

function image(
  id: string,
  family: 'seedream' | 'nano-banana',
  resolutions: readonly string[],
  resolutionDefault: string,
  aspects: readonly string[],
  offersN: boolean,
): ModelRoute {
  return {
    id,
    family,
    kind: 'image',
    endpoint: 'generations',
    required: ['prompt'],
    fields: {
      prompt: { type: 'string', minLength: 1 },
      resolution: { type: 'string', allowed: resolutions, default: resolutionDefault },
      aspectRatio: { type: 'string', allowed: aspects, default: '1:1' },
      referenceImages: { type: 'url[]' },
      ...(offersN ? { n: { type: 'integer', min: 1, max: 10, default: 1 } satisfies FieldSpec } : {}),
    },
  };
}

export const MODEL_ROUTES: readonly ModelRoute[] = [
  claude('claude-sonnet-5'),
  claude('claude-opus-5'),
  claude('claude-opus-4-8', 4096),
  gemini('gemini-3.5-flash-lite', true),
  gemini('gemini-3.8-flash', false),
  gemini('gemini-3.7-flash', false),
  gemini('gemini-3.6-flash', false),
  openaiStyle('glm-5.3', 'glm', true),
  openaiStyle('gpt-5.6-luna', 'gpt-5.6', true),
  openaiStyle('gpt-5.6-terra', 'gpt-5.6', false),
  openaiStyle('gpt-5.6-sol', 'gpt-5.6', false),

  {
    ...video('wan2.7-video', 'wan', {
      // The pricing table names the resolutions; duration and aspect bounds are not shown.
      resolution: { type: 'string', allowed: ['720p', '1080p'] },
      duration: { type: 'integer', min: 1, max: SANE_MAX_VIDEO_SECONDS },
      aspectRatio: { type: 'string', minLength: 1 },
      imageUrl: url,
      last_frame_url: url,
      reference_video_url: url,
      reference_audio_url: url,
      generateAudio: { type: 'boolean' },
    }),
    unverifiableLimits: ['reference video length 15 s'],
  },
  video('veo-3.1', 'veo', {
    resolution: { type: 'string', allowed: ['720p', '1080p', '4K'] },
    duration: { type: 'integer', min: 1, max: 8 },
    aspectRatio: { type: 'string', minLength: 1 },
    imageUrl: url,
    last_frame_url: url,
    generateAudio: { type: 'boolean' },
  }),
  video('minimax-h3', 'minimax', {
    // Only 768P is priced; other resolutions exist ("not shown"), so any name is accepted.
    resolution: { type: 'string', minLength: 1 },
    duration: { type: 'integer', min: 4, max: 15 },
    aspectRatio: { type: 'string', minLength: 1 },
    imageUrl: url,
    referenceImages: { type: 'url[]' },
    last_frame_url: url,
    generateAudio: { type: 'boolean' },
  }),
  video('sora-2-pro', 'sora', {
    resolution: { type: 'string', allowed: ['1080p'], default: '1080p' },
    duration: { type: 'integer', allowed: [10, 15], default: 10 },
    aspectRatio: { type: 'string', allowed: VIDEO_ASPECTS, default: '16:9' },
    imageUrl: url,
    generateAudio: { type: 'boolean', default: true },
  }),
  video('happyhorse-1.0', 'happyhorse', {
    resolution: { type: 'string', allowed: ['720p', '1080p'], default: '720p' },
    duration: { type: 'integer', allowed: [5, 10, 15], default: 5 },
    aspectRatio: { type: 'string', allowed: VIDEO_ASPECTS, default: '16:9' },
    imageUrl: url,
  }),

  image('seedream-4.0', 'seedream', ['1K', '2K', '4K'], '1K', SEEDREAM_ASPECTS, true),
  image('seedream-4.5', 'seedream', ['2K', '4K'], '2K', SEEDREAM_ASPECTS, true),
  image('seedream-5.0', 'seedream', ['2K', '3K'], '2K', SEEDREAM5_ASPECTS, true),
  image('nano-banana-pro', 'nano-banana', ['1K', '2K', '4K'], '1K', NANO_ASPECTS, false),
];
