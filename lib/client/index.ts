// The agent client's public surface: what `retrysafe/client` exports. The adapters sit behind their own
// subpaths (`retrysafe/client/openai`, `/anthropic`, `/ai-sdk`), so a caller loads only the one it uses.
// Nothing here loads the server's code: its types are imported as types.

export type { ToolDescription } from '../api/description';
export { type AgentAnswer, answerToolCall, type ModelToolCall, modelInputSchema, type ToolCaller } from './agent';
export { RetrysafeClient } from './client';
export { CLIENT_DEFAULTS } from './defaults';
export {
  GaveUpError,
  type LastOutcome,
  MayRunAnewError,
  RetrysafeClientError,
  ToolCallError,
  UnexpectedAnswerError,
} from './errors';
export { isValidKey, keyForToolCall, mintKey } from './keys';
export type {
  AnswerErrorCode,
  CallOptions,
  Completed,
  FetchLike,
  JsonObject,
  NextStep,
  Operation,
  ReadOptions,
  RetryOptions,
  RetrysafeClientOptions,
  ToolMap,
  ToolTypes,
  UntypedTools,
} from './types';
