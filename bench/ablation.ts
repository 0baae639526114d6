/**
 * Where the CPU over bare goes, by feature: the refund entry bundled again with one feature taken out
 * at bundle time (a source edit applied by an esbuild plugin to the module that does the work; `lib/`
 * stays as it runs in production), each variant called in the same process as the deployed refund and
 * the bare handler. What a variant saves is what that feature costs per call; what is left with every
 * feature out is retrysafe's bookkeeping (scopes, the answer, the HTTP boundary).
 *
 * A profiler's sampling charges time to whichever frame it lands in; taking a part out and measuring the
 * process's CPU does not guess. An edit that no longer matches its module, or a module to edit that is no
 * longer bundled, fails the bench: a refactor cannot silently turn an ablation into a no-op.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Plugin } from 'esbuild';

const ROOT = join(__dirname, '..');

/** One textual edit of one module: `find` must occur in it exactly once. */
export interface SourceEdit {
  /** Path from the repository root. */
  readonly module: string;
  readonly find: string;
  readonly replace: string;
}

export interface Ablation {
  readonly label: string;
  /** The feature taken out, as docs/benchmark.md names it. */
  readonly feature: string;
  readonly edits: readonly SourceEdit[];
}

export const ABLATIONS: readonly Ablation[] = [
  {
    label: 'no_metrics',
    feature: "the call's embedded metrics (calls, latency by tool and outcome: the alarms' data)",
    edits: [
      {
        module: 'lib/observability/call-log.ts',
        find: 'const metrics = options.metrics\n',
        replace: 'const metrics = false && options.metrics\n',
      },
    ],
  },
  {
    label: 'no_call_log',
    feature: "the call's log line and its metrics (the operator's record of every call)",
    edits: [
      {
        module: 'lib/observability/call-log.ts',
        find: '  return function logCall(outcome, call) {\n',
        replace: '  return function logCall(outcome, call) {\n    if (outcome) return;\n',
      },
    ],
  },
  {
    label: 'no_validation',
    feature: 'validating the identity and the arguments (zod: unknown fields refused, defaults applied)',
    edits: [
      {
        module: 'lib/idempotency/arguments.ts',
        find: '  const key = clientKeySchema.safeParse(rawKey);',
        replace:
          '  return { clientKey: rawKey as string, args: rest as z.output<S> };\n  const key = clientKeySchema.safeParse(rawKey);',
      },
      {
        module: 'lib/idempotency/runtime.ts',
        find: 'const caller = identitySchema.safeParse(identity);',
        replace: 'const caller = { success: true as const, data: identity, error: undefined as never };',
      },
    ],
  },
  {
    label: 'no_fingerprint',
    feature:
      "the arguments' fingerprint (RFC 8785 canonical JSON + SHA-256: a reused key with other arguments is a conflict)",
    edits: [
      {
        module: 'lib/idempotency/fingerprint.ts',
        find: '  const canonical = canonicalize(args);',
        replace: "  if (args) return 'ablated';\n  const canonical = canonicalize(args);",
      },
    ],
  },
  {
    label: 'no_deadline',
    feature:
      "bounding every DynamoDB request: the invocation's deadline (AsyncLocalStorage) and the SDK's timeouts (connection 1 s, request 5 s)",
    edits: [
      {
        module: 'lib/store/deadline.ts',
        find: '  return invocationEnd.run(Date.now() + deadline.getRemainingTimeInMillis(), work);',
        replace: '  return work();',
      },
      {
        module: 'lib/store/client.ts',
        find: '    requestHandler: { connectionTimeout: 1_000, requestTimeout: REQUEST_TIMEOUT_MS, throwOnRequestTimeout: true },\n',
        replace: '',
      },
      { module: 'lib/store/client.ts', find: '  boundByInvocationDeadline(client);\n', replace: '' },
    ],
  },
];

/** Every ablation at once: what is left is retrysafe's bookkeeping. */
export const ALL_OUT: Ablation = {
  label: 'all_out',
  feature: 'all of the above',
  edits: ABLATIONS.filter((ablation) => ablation.label !== 'no_metrics').flatMap((ablation) => ablation.edits),
};

/**
 * An esbuild plugin that applies `edits` to their modules (under `root`, the checkout bundled) as they
 * are loaded. The build fails when an edit does not match its module exactly once, or when a module to
 * edit was never bundled (renamed, moved, no longer imported): an ablation never silently does nothing.
 */
export function editsPlugin(edits: readonly SourceEdit[], root: string = ROOT): Plugin {
  const byFile = new Map<string, SourceEdit[]>();
  for (const edit of edits) {
    const file = join(root, edit.module);
    byFile.set(file, [...(byFile.get(file) ?? []), edit]);
  }
  const escaped = [...byFile.keys()].map((file) => file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
  return {
    name: 'bench-ablation',
    setup(build) {
      const edited = new Set<string>();
      build.onLoad({ filter: new RegExp(`^(${escaped.join('|')})$`) }, ({ path }) => {
        let contents = readFileSync(path, 'utf8');
        for (const edit of byFile.get(path) ?? []) {
          const at = contents.indexOf(edit.find);
          if (at === -1 || contents.indexOf(edit.find, at + 1) !== -1) {
            throw new Error(`ablation: ${JSON.stringify(edit.find)} is not in ${edit.module} exactly once`);
          }
          contents = contents.replace(edit.find, edit.replace);
        }
        edited.add(path);
        return { contents, loader: 'ts' };
      });
      build.onEnd(() => {
        const missed = [...byFile.keys()].filter((file) => !edited.has(file));
        if (missed.length > 0) throw new Error(`ablation: never bundled, so not edited: ${missed.join(', ')}`);
      });
    },
  };
}
