import { mcpEntry } from 'retrysafe/lambda/mcp';
import { READS } from '../app/reads';
import { services } from '../app/services';
import { TOOLS } from '../app/tools';

/** POST /mcp — every tool and read over MCP; the function verifies the token against the issuer's JWKS. */
export const handler = mcpEntry(TOOLS, services, { reads: READS });
