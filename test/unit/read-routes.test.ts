import { join } from 'node:path';
import * as z from 'zod/mini';
import { configProblems } from '../../lib/dev/config';
import { retrysafePropProblems } from '../../lib/infra/retrysafe';
import { type AnyReadModule, defineReadModule, pathParamsOf } from '../../lib/tools/read-module';
import { sendReminder } from '../fixtures/tools/send-reminder';

const LAMBDAS = join(__dirname, '..', '..', 'lambdas');
const FIXTURE_LAMBDAS = join(__dirname, '..', 'fixtures', 'lambdas');

/** A read of nothing at `path`, its arguments the path's parameters. */
function readAt(name: string, path: string): AnyReadModule {
  return defineReadModule({
    name,
    description: 'Reads nothing.',
    path,
    args: z.strictObject(Object.fromEntries(pathParamsOf(path).map((param) => [param, z.string()]))),
    found: z.strictObject({}),
    access: {},
    async read() {
      return { ok: true } as never;
    },
  });
}

/** The example's outbox, where the fixture tool writes. */
const TABLES_OUTBOX = { partitionKey: { name: 'tenant', type: 'S' } } as const;

/** The two places an app's reads are checked with its tools, before anything is served or deployed. */
const CHECKS = {
  'the config (retrysafe dev)': (reads: readonly AnyReadModule[]) =>
    configProblems({ tools: [sendReminder], services: () => ({}), tables: { outbox: TABLES_OUTBOX }, reads }),
  'the construct (retrysafe/cdk)': (reads: readonly AnyReadModule[]) =>
    retrysafePropProblems({
      tools: [{ tool: { ...sendReminder, access: {} }, entry: join(FIXTURE_LAMBDAS, 'send_reminder.ts') }],
      entries: {
        mcp: join(LAMBDAS, 'mcp.ts'),
        complete: join(LAMBDAS, 'complete.ts'),
        list_tools: join(LAMBDAS, 'list_tools.ts'),
        openapi: join(LAMBDAS, 'openapi.ts'),
      },
      reads: reads.map((read) => ({ read, entry: join(LAMBDAS, 'get_invoice.ts') })),
    }),
};

describe("a read's name and route among the API's", () => {
  it.each(Object.entries(CHECKS))(
    '%s refuses built-in names, paths of the API’s own and a second read at one route, all at once',
    (_where, problemsOf) => {
      const reads = [
        readAt('get_operation', '/operations/{key}'),
        readAt('status', '/health'),
        readAt('tools_again', '/tools'),
        readAt('get_tool', '/tools/{tool}'),
        readAt('mcp_sessions', '/mcp/sessions'),
        readAt('get_note', '/notes/{note_id}'),
        readAt('get_note_again', '/notes/{id}'),
      ];

      const problems = problemsOf(reads);

      expect(problems).toEqual([
        "get_operation: a tool or read cannot be named like one of retrysafe's own entry points",
        "reads.status.path: /health is a path of retrysafe's own API",
        "reads.tools_again.path: /tools is a path of retrysafe's own API",
        "reads.get_tool.path: /tools/{tool} is under /tools, a path of retrysafe's own API",
        "reads.mcp_sessions.path: /mcp/sessions is under /mcp, a path of retrysafe's own API",
        'reads.get_note_again.path: GET /notes/{id} is already the route of reads.get_note',
      ]);
    },
  );

  it.each(Object.entries(CHECKS))('%s accepts reads at routes of their own', (_where, problemsOf) => {
    const reads = [readAt('get_note', '/notes/{note_id}'), readAt('list_notes', '/notes'), readAt('me', '/me')];

    expect(problemsOf(reads)).toEqual([]);
  });
});
