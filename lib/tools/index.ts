// The tool-definition API (`retrysafe/tools`): what a team needs to write a tool of its own — its module
// (`defineToolModule`), the access it declares, and the core's light definition surface (errors, ids,
// types) — without the runtime, Powertools or DynamoDB.
export * from '../idempotency/definition';
export {
  type AnyToolModule,
  type DynamoAction,
  defineToolModule,
  type TableAccess,
  type ToolEntryModule,
  type ToolHandler,
  type ToolModule,
  type ToolSpec,
  type ToolTypesOf,
} from './tool-module';
