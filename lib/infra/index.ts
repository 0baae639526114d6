// `retrysafe/cdk`: retrysafe in an app's own CDK stack. `Retrysafe` builds everything around the app's
// tools; the building blocks (the idempotency table, a table from its schema) are here for stacks that
// want them apart. aws-cdk-lib, constructs and esbuild are the app's (peer dependencies).

export { eraseAccessOf } from '../api/routes';
export type { KeyAttribute, TableSchema } from '../store/tables';
export { AgentUserPool, type AgentUserPoolProps } from './agent-user-pool';
export { AgentCoreGateway, type AgentCoreGatewayOptions, type AgentCoreGatewayProps } from './agentcore-gateway';
export { CompleterTriggers, type CompleterTriggersProps } from './completer-triggers';
export {
  ACCESS_LOG_RETENTION_DAYS,
  AGENTCORE_GATEWAY_DEFAULTS,
  DEFAULT_TRACING_DEPTH,
  FUNCTION_DEFAULTS,
  JWT_DEFAULTS,
  LIGHT_ROUTE_THROTTLE,
  MCP_RESERVED_CONCURRENCY,
  MCP_ROUTE_THROTTLE,
  STAGE_THROTTLE,
  TRACING_DEPTHS,
  type TracingDepth,
} from './defaults';
export { CLAIM_ACTIONS, IdempotencyTable, type IdempotencyTableProps } from './idempotency-table';
export { Observability, type ObservabilityProps } from './observability';
export {
  CONSTRUCT_VARIABLES,
  locationOutputs,
  Retrysafe,
  type RetrysafeEntries,
  type RetrysafeProps,
  type RetrysafeRead,
  type RetrysafeTool,
  retrysafePropProblems,
  type ToolNeeds,
} from './retrysafe';
export { type DefinedTableOptions, tableFromDefinition as definedTable } from './table';
