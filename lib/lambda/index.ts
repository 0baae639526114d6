// `retrysafe/lambda`: what an app's Lambda entry files are made of — each entry file is one line over the
// app's tool list and its one services composition. Each kind of entry sits behind its own subpath
// (`retrysafe/lambda/tool`, `/mcp`, `/completer`, `/listing`, `/erase`), so a function's bundle carries
// only what its entry uses: a tool's function never loads the MCP SDK. This subpath is the light part:
// the core services an app composes its own from, and `registered`, which checks an app's tool list
// against its entry files.

export { type KeyAttribute, type TableSchema, tableEnvVar } from '../store/tables';
export {
  type ComposeServices,
  type CoreServices,
  createCoreServices,
  type ReadsOver,
  type ToolsOver,
} from './core-services';
export { registered, type ToolEntryModule, type ToolHandler } from './registered';
