// The names of the stack outputs that say where an app's tables are — written by the construct, read back
// by `retrysafe calls|complete|erase --outputs` (from `cdk deploy --outputs-file`). No CDK import: the
// command loads this file too.

/** The output (construct id) naming table `name`'s physical name: `accounts` → `AccountsTableName`. */
export function tableOutputId(name: string): string {
  const pascal = name
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => `${part[0]!.toUpperCase()}${part.slice(1)}`)
    .join('');
  return `${pascal}TableName`;
}

/**
 * The values in a `cdk deploy --outputs-file` JSON for output `id`: its key is `id` when the output sits
 * at the stack's top, else the construct path's ids, `id` and CDK's 8-character hash
 * (`ToolsAccountsTableName1A2B3C4D`).
 */
export function outputValues(
  outputs: Readonly<Record<string, Readonly<Record<string, string>>>>,
  id: string,
): string[] {
  const key = new RegExp(`^[A-Za-z0-9]*?${id}(?:[0-9A-F]{8})?$`);
  return Object.values(outputs).flatMap((stack) =>
    Object.entries(stack)
      .filter(([name]) => key.test(name))
      .map(([, value]) => value),
  );
}
