// The tool-definition API (`retrysafe/tools`): what a team needs to write a tool of its own — its module
// (`defineToolModule`), the access it declares, and the core's light definition surface (errors, ids,
// types) — and its own reads (`defineReadModule`), without the runtime, Powertools or DynamoDB.
export * from '../idempotency/definition';
export {
  type AnyReadModule,
  type BoundRead,
  defineReadModule,
  type ReadAnswer,
  type ReadModule,
  type ReadSpec,
  readFailure,
} from './read-module';
export {
  type AnyToolModule,
  type DynamoAction,
  defineToolModule,
  type TableAccess,
  type ToolModule,
  type ToolSpec,
  type ToolTypesOf,
} from './tool-module';
