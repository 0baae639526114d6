/**
 * What `retrysafe dev`, `retrysafe calls`, `complete` and `erase` know of this app: the same tools,
 * services and tables its Lambda entries and its CDK app (bin/app.ts) are built from.
 */
import { defineConfig } from 'retrysafe/config';
import { READS } from './src/reads';
import { services } from './src/services';
import { TABLES } from './src/tables';
import { TOOLS } from './src/tools';

export default defineConfig({ tools: TOOLS, reads: READS, services, tables: TABLES });
