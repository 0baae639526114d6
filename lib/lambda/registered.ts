import type { ToolLambdaHandler } from '../http/write';
import type { AnyToolModule } from '../tools/tool-module';

/**
 * The Lambda handler of one tool — API Gateway's events and an AgentCore Gateway's — tagged with the tool
 * it serves (see `registered`).
 */
export type ToolHandler<N extends string> = ToolLambdaHandler & { readonly tool: N };

/** What a tool's Lambda entry (`lambdas/<name>.ts`) exports. */
export interface ToolEntryModule {
  readonly handler: ToolHandler<string>;
}

/**
 * One line of an app's tool list: a tool module, checked by the compiler against its Lambda entry. The type
 * argument is the entry module, `typeof import('<the entry file>')`:
 *  - a tool without its entry file does not compile (the import type cannot be resolved);
 *  - an entry that serves another tool does not compile (its handler's `tool` is another name);
 *  - a line without the type argument does not compile (`Entry` defaults to `never`);
 *  - an entry whose handler is typed with a wide `ToolHandler<string>` does not compile either.
 * The type argument is erased at build time: no bundle loads the entry through the list.
 */
export function registered<Entry extends ToolEntryModule = never>(
  module: [Entry] extends [never]
    ? never
    : string extends Entry['handler']['tool']
      ? never
      : AnyToolModule & { readonly name: Entry['handler']['tool'] },
): AnyToolModule & { readonly name: Entry['handler']['tool'] } {
  return module;
}
