/**
 * The example app, as `retrysafe dev` (`npm start`), `retrysafe calls`, `complete` and `erase` see it: its
 * five tools, its reads, the services its Lambda entries compose and its tables — the same lists its stack
 * (app/stack.ts) deploys. An app of its own writes the same file over its own tools
 * (examples/own-tools/retrysafe.config.ts).
 */
import { defineConfig } from 'retrysafe/config';
import { READS } from './app/reads';
import { services } from './app/services';
import { TABLES } from './app/tables';
import { TOOLS } from './app/tools';

export default defineConfig({ tools: TOOLS, services, tables: TABLES, reads: READS });
