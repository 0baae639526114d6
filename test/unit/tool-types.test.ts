/**
 * `retrysafe types` (lib/cli/tool-types.ts): an app's tool types as plain TypeScript for an agent app's
 * client. The example's `RetrysafeTools` (lib/client/tools.ts) is its output, kept up to date here, and
 * the types the tools' zod schemas give (`ToolTypesOf`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as ts from 'typescript';
import * as z from 'zod/mini';
import type { RetrysafeTools } from '../../app/client-types';
import { TOOLS } from '../../app/tools';
import type { closeTicket } from '../../app/tools/close-ticket';
import type { createInvoice } from '../../app/tools/create-invoice';
import type { createTicket } from '../../app/tools/create-ticket';
import type { refund } from '../../app/tools/refund';
import type { sendEmail } from '../../app/tools/send-email';
import { toolTypesSource } from '../../lib/cli/tool-types';
import type { ToolTypes } from '../../lib/client/types';
import { defineToolModule, type ToolTypesOf } from '../../lib/tools/tool-module';

/** `true` when A and B are assignable both ways (readonly aside, the same type). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/**
 * The plain types against the schemas': the same arguments; a receipt that is the one `execute` returns
 * or narrower — the plain receipt is the receipt schema's (`status: 'open'`), `ToolTypesOf`'s the type
 * inferred from `execute` (`status: string`).
 */
type Both<T extends ToolTypes<object, object>, M> = [
  Same<T['args'], ToolTypesOf<M>['args']>,
  [T['receipt']] extends [ToolTypesOf<M>['receipt']] ? true : false,
] extends [true, true]
  ? true
  : false;

// Checked by the compiler (npm run lint): a plain type that drifted from its schema does not compile.
const sameAsTheSchemas: [
  Both<RetrysafeTools['create_invoice'], typeof createInvoice>,
  Both<RetrysafeTools['refund'], typeof refund>,
  Both<RetrysafeTools['create_ticket'], typeof createTicket>,
  Both<RetrysafeTools['close_ticket'], typeof closeTicket>,
  Both<RetrysafeTools['send_email'], typeof sendEmail>,
  keyof RetrysafeTools extends (typeof TOOLS)[number]['name'] ? true : false,
  (typeof TOOLS)[number]['name'] extends keyof RetrysafeTools ? true : false,
] = [true, true, true, true, true, true, true];

/** Syntax and type errors of `source` compiled alone, its import replaced by `ToolTypes` and `JsonObject`. */
function compileErrors(source: string): string[] {
  const name = '/virtual/tools.ts';
  const text = source.replace(
    /^import type .*$/m,
    'interface ToolTypes<A, R> { readonly args: A; readonly receipt: R }\ntype JsonObject = { [key: string]: unknown };',
  );
  const options: ts.CompilerOptions = { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022, types: [] };
  const host = ts.createCompilerHost(options);
  const read = host.getSourceFile;
  host.getSourceFile = (file, language) =>
    file === name ? ts.createSourceFile(file, text, language) : read(file, language);
  const program = ts.createProgram([name], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

describe('retrysafe types', () => {
  it("app/client-types.ts is the command's output over the example's tools (npm run client-types)", () => {
    expect(sameAsTheSchemas.every(Boolean)).toBe(true);
    const written = readFileSync(join(__dirname, '..', '..', 'app', 'client-types.ts'), 'utf8');
    const body = (source: string) => source.slice(source.indexOf('import type'));
    const fresh = toolTypesSource(TOOLS, { name: 'RetrysafeTools', importFrom: 'retrysafe/client', header: '' });

    expect(body(written)).toBe(body(fresh));
  });

  it('writes what a schema allows: optionals, defaults, literals, enums, arrays, nested objects, records, nullables, odd keys', () => {
    const tool = defineToolModule({
      name: 'tag_order',
      description: "Tag an order. It's */ safe.",
      args: z.strictObject({
        order_id: z.string(),
        tags: z.array(z.enum(['rush', 'gift'])),
        note: z.optional(z.string()),
        priority: z._default(z.int(), 1),
        'x-source': z.literal('agent'),
        address: z.strictObject({ line: z.string(), zip: z.nullable(z.string()) }),
        labels: z.record(z.string(), z.number()),
      }),
      annotations: { destructiveHint: false, openWorldHint: false },
      access: {},
      async execute() {
        return { receipt: { ok: true }, replayed: false };
      },
    });

    const source = toolTypesSource([tool], { name: 'AppTools', importFrom: 'retrysafe/client', header: 'test' });

    expect(compileErrors(source)).toEqual([]);
    expect(source).toContain("import type { JsonObject, ToolTypes } from 'retrysafe/client';");
    expect(source).toContain("/** Tag an order. It's *\\/ safe. */");
    for (const line of [
      'order_id: string;',
      "tags: Array<'rush' | 'gift'>;",
      'note?: string;',
      'priority?: number;',
      "'x-source': 'agent';",
      'zip: string | null;',
      '[key: string]: number;',
    ]) {
      expect(source).toContain(line);
    }
    expect(source).toMatch(/\},\n {4}JsonObject\n {2}>;/);
  });
});
