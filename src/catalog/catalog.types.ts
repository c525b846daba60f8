/**
 * Types of the model catalog. The catalog is data: every route, the fields it offers, their
 * allowed values, defaults and limits. Nothing here imports Nest or Prisma.
 */

export type Kind = 'chat' | 'video' | 'image';
export type Endpoint = 'chat' | 'generations';
export type UsageShape = 'openai' | 'anthropic' | 'gemini';

export type Family =
  | 'claude'
  | 'gemini'
  | 'glm'
  | 'gpt-5.6'
  | 'wan'
  | 'veo'
  | 'minimax'
  | 'sora'
  | 'happyhorse'
  | 'seedream'
  | 'nano-banana';

export type Scalar = string | number | boolean;

/** One request field of a route. `allowed` / `min` / `max` only where the spec shows them. */
export type FieldSpec =
  | { type: 'string'; allowed?: readonly string[]; default?: string; minLength?: number }
  | {
      type: 'integer';
      allowed?: readonly number[];
      default?: number;
      min?: number;
      max?: number;
    }
  | { type: 'number'; allowed?: readonly number[]; default?: number }
  | { type: 'boolean'; default?: boolean }
  | { type: 'url' }
  | { type: 'url[]'; maxItems?: number }
  /** An object whose only key is `key`, holding a string from `allowed`. */
  | { type: 'enumObject'; key: string; allowed: readonly string[]; default?: string }
  | { type: 'messages' };

export interface MediaLimits {
  /** Gemini-family chat: images and videos inside content arrays. */
  maxImages: number;
  maxImageBytes: number;
  maxVideos: number;
  maxVideoBytes: number;
  scheme: 'https';
}

export interface ModelRoute {
  id: string;
  family: Family;
  kind: Kind;
  endpoint: Endpoint;
  /** Required fields beyond `model`. */
  required: readonly string[];
  /** Every field the route offers (beyond `model`), with what the spec shows of it. */
  fields: Readonly<Record<string, FieldSpec>>;
  /** Chat routes: the usage shape the vendor behind the route reports. */
  usageShape?: UsageShape;
  /** Gemini-family chat routes take content arrays with media, within these limits. */
  media?: MediaLimits;
  /**
   * Fields that only make sense with another field (spec: last_frame_url is "paired with imageUrl").
   */
  pairedWith?: Readonly<Record<string, string>>;
  /** Limits the spec states but the gateway cannot check without fetching the media. */
  unverifiableLimits?: readonly string[];
}
