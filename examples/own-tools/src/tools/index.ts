import { logCall } from './log-call';
import { openAccount } from './open-account';
import { pushContact } from './push-contact';

/** The app's tools: the MCP function, the completer, GET /tools and the OpenAPI document serve these. */
export const TOOLS = [openAccount, logCall, pushContact] as const;
