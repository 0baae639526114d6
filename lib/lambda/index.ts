// `retrysafe/lambda`: what an app's Lambda entry files are made of. Each entry file is one line over the
// app's tool list and its one services composition; the construct (`retrysafe/cdk`) bundles them.
export { type ComposeServices, type CoreServices, createCoreServices } from './core-services';
export {
  completerEntry,
  eraseEntry,
  getOperationEntry,
  healthEntry,
  listToolsEntry,
  type McpEntryOptions,
  mcpEntry,
  notFoundEntry,
  openApiEntry,
  toolEntry,
} from './entries';
