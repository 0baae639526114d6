// `retrysafe/testing`: test an app's tools the way this repository tests its own — on DynamoDB Local,
// through the real runtime. Start a store with the app's tables, run each tool (first call, replay,
// conflict, a crash and its retry), check the tables, stop the store.

export { type KeyAttribute, type TableSchema, tableEnvVar } from '../store/tables';
export { newTenant, startTestStore, type TestStore, type TestStoreOptions } from './test-store';
export type {
  CallArguments,
  CrashAndRetry,
  CrashAndRetryOptions,
  ToolHarness,
  ToolHarnessOptions,
} from './tool-harness';
