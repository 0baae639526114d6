// What an entry point's code sends to DynamoDB, declared: a tool's or a read's access to the app's tables,
// and an entry point's to the idempotency table. Plain types: the construct grants exactly this, and the
// tests compare it with the commands the code really sends on DynamoDB Local.

/** A DynamoDB action a tool's own code may send to a domain table. */
export type DynamoAction =
  | 'dynamodb:GetItem'
  | 'dynamodb:PutItem'
  | 'dynamodb:UpdateItem'
  | 'dynamodb:DeleteItem'
  | 'dynamodb:Query'
  | 'dynamodb:Scan';

/**
 * The DynamoDB access a tool's own code needs, per table, by the table's name in the app (`invoices`,
 * `contacts`: the names the stack's or the construct's `tables` use). The idempotency table's access is
 * the runtime's and every tool gets it; this is what the tool adds. It becomes the tool's IAM grants in
 * the stack, and a test compares it with the commands the tool really sends on DynamoDB Local.
 */
export type TableAccess<T extends string = string> = Readonly<Partial<Record<T, readonly DynamoAction[]>>>;

/** What one entry point's code sends to DynamoDB: its idempotency-table access and its domain tables' actions. */
export interface FunctionAccess {
  /**
   * `claims`: what the idempotency runtime needs to claim, read, complete and release; `read`: GetItem;
   * `erase`: Scan and DeleteItem (tenant erase).
   */
  readonly idempotencyTable?: 'claims' | 'read' | 'erase';
  readonly tables?: TableAccess;
}
