/**
 * The gateway's one refusal shape (decisions §5): { code, message, details? }, code never 1000.
 * `code` is the HTTP status × 10 plus a small discriminator, so a client can switch on it.
 */
export interface ErrorBody {
  code: number;
  message: string;
  details?: Record<string, unknown>;
}

export class ApiError extends Error {
  /** Seconds after which a retry may succeed (a 429's Retry-After header). */
  retryAfter?: number;

  constructor(
    readonly status: number,
    readonly code: number,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }

  toBody(): ErrorBody {
    return this.details
      ? { code: this.code, message: this.message, details: this.details }
      : { code: this.code, message: this.message };
  }

  static badRequest(message: string, details?: Record<string, unknown>): ApiError {
    return new ApiError(400, 4000, message, details);
  }
  static unauthorized(message = 'missing or invalid API key: send Authorization: Bearer <key>'): ApiError {
    return new ApiError(401, 4010, message);
  }
  static paymentRequired(code: number, message: string, details?: Record<string, unknown>): ApiError {
    return new ApiError(402, code, message, details);
  }
  static forbidden(message: string): ApiError {
    return new ApiError(403, 4030, message);
  }
  static notFound(message: string): ApiError {
    return new ApiError(404, 4040, message);
  }
  static conflict(message: string, details?: Record<string, unknown>): ApiError {
    return new ApiError(409, 4090, message, details);
  }
  static tooMany(message: string, details?: Record<string, unknown>, retryAfter?: number): ApiError {
    const error = new ApiError(429, 4290, message, details);
    if (retryAfter !== undefined) error.retryAfter = retryAfter;
    return error;
  }
  static badGateway(message: string, details?: Record<string, unknown>): ApiError {
    return new ApiError(502, 5020, message, details);
  }
  static serviceUnavailable(message: string, details?: Record<string, unknown>): ApiError {
    return new ApiError(503, 5030, message, details);
  }
  static gatewayTimeout(message: string, details?: Record<string, unknown>): ApiError {
    return new ApiError(504, 5040, message, details);
  }
}

/** Maps Fastify's own errors (body parsing, size, content type) to the refusal shape. */
export function fromFastifyError(error: {
  code?: string;
  statusCode?: number;
  message?: string;
}): ApiError | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(413, 4130, 'request body is too large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(415, 4150, 'Content-Type must be application/json');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new ApiError(414, 4140, 'the request path is too long');
    case 'FST_CSRF_INVALID_TOKEN':
    case 'FST_CSRF_MISSING_SECRET':
      return ApiError.forbidden(
        "the console's CSRF proof (x-csrf-token) is missing or wrong: reload the console, or use a bearer token",
      );
    case 'FST_ERR_BAD_URL':
      return ApiError.badRequest('path: is not a valid URL');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return ApiError.badRequest('body: is empty; send a JSON object');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return ApiError.badRequest(`body: is not valid JSON (${error.message ?? 'parse error'})`);
  }
  if (error.statusCode === 400 && /JSON/i.test(error.message ?? '')) {
    return ApiError.badRequest(`body: is not valid JSON (${error.message})`);
  }
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    return new ApiError(error.statusCode, error.statusCode * 10, error.message ?? 'bad request');
  }
  return undefined;
}
