import { mcpEntry } from 'retrysafe/lambda/mcp';
import { READS } from '../reads';
import { services } from '../services';
import { TOOLS } from '../tools';

export const handler = mcpEntry(TOOLS, services, { reads: READS });
