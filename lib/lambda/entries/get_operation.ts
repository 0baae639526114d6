import { getOperationEntry } from '../operation';

/**
 * GET /tools/{tool}/operations/{key} — the caller's own record of a client key. The tools' names come
 * from the environment (`TOOL_NAMES`, set by the construct), so this bundle carries no tool: the package
 * ships it as every app's own (`Retrysafe`'s default `get_operation` entry).
 */
export const handler = getOperationEntry();
