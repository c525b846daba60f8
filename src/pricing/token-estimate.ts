/**
 * Input-token estimate for a chat request, used only for the hold and for choosing the GPT-5.6
 * tier at submission. It is deliberately generous (about one token per 3 UTF-8 bytes, where
 * English text averages nearer 4), so holds tend to exceed the settled charge rather than fall
 * short. The real count comes from usage at settlement.
 */
const BYTES_PER_TOKEN = 3;
const TOKENS_PER_MESSAGE = 4;
/** Typical vendor figures for one image (about 1,290 tokens) and a 20 MB video (tens of thousands). */
export const TOKENS_PER_IMAGE = 1_300;
export const TOKENS_PER_VIDEO = 30_000;

export function estimateInputTokens(messages: unknown): number {
  if (!Array.isArray(messages)) return 0;
  let tokens = 0;
  for (const message of messages) {
    tokens += TOKENS_PER_MESSAGE;
    const content = (message as { content?: unknown })?.content;
    if (typeof content === 'string') {
      tokens += textTokens(content);
      continue;
    }
    if (!Array.isArray(content)) continue;
    for (const block of content as Array<Record<string, unknown>>) {
      if (block?.type === 'text' && typeof block.text === 'string') tokens += textTokens(block.text);
      else if (block?.type === 'image_url') tokens += TOKENS_PER_IMAGE;
      else if (block?.type === 'video_url') tokens += TOKENS_PER_VIDEO;
    }
  }
  return tokens;
}

function textTokens(text: string): number {
  // Buffer.byteLength counts UTF-8 bytes natively without encoding the string.
  return Math.ceil(Buffer.byteLength(text, 'utf8') / BYTES_PER_TOKEN);
}
