import { defineConfig } from 'tsdown';
import { PACKAGE_ENTRIES } from './lib/package-entries';

/**
 * The package's build (`npm run build`): every public entry point, as ES modules and CommonJS, each with
 * its type declarations, into `dist/`. Output names mirror the subpaths of `exports` in package.json.
 * Every dependency is a peer (see README, "Dependencies"), so nothing of them is bundled — the AWS Lambda
 * event types included: inlined, their global `awslambda` namespace clashed with an app's own
 * `@types/aws-lambda` (an optional peer, as most Lambda projects have it).
 */
export default defineConfig({
  entry: PACKAGE_ENTRIES,
  outDir: 'dist',
  format: ['esm', 'cjs'],
  platform: 'node',
  target: 'node20',
  dts: true,
  fixedExtension: true,
  sourcemap: false,
  clean: true,
  shims: true,
  tsconfig: 'tsconfig.json',
});
