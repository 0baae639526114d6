import { logCall } from './log-call';
import { openAccount } from './open-account';

/** The app's tools: the MCP function, the completer, GET /tools and the OpenAPI document serve these. */
export const TOOLS = [openAccount, logCall] as const;
