import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { ToolContext } from 'retrysafe/tools';
import { type CreatedOnce, createOnce, type Stamped } from 'retrysafe/tools/dynamodb';

export interface Account {
  readonly tenant: string;
  readonly external_id: string;
  readonly account_id: string;
  readonly name: string;
}

/** An account as the table holds it: `opened_by` is the call that opened it (its `callId`). */
export type OpenedAccount = Stamped<Account, 'opened_by'>;

export class AccountStore {
  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /** Opens the account once per (tenant, external id); `replayed` unless this call opened it. */
  open(account: Account, context: Pick<ToolContext, 'callId'>): Promise<CreatedOnce<OpenedAccount>> {
    return createOnce(this.documents, {
      table: this.table,
      key: 'tenant',
      item: account,
      context,
      stampAttribute: 'opened_by',
    });
  }
}

export interface LoggedCall {
  readonly tenant: string;
  readonly call_id: string;
  readonly summary: string;
}

/** A logged call as the table holds it: `logged_by` is the call that logged it. */
export type StoredCall = Stamped<LoggedCall, 'logged_by'>;

export class CallLog {
  constructor(
    private readonly documents: DynamoDBDocumentClient,
    private readonly table: string,
  ) {}

  /** Logs the call once per (tenant, call id); `replayed` unless this call logged it. */
  log(call: LoggedCall, context: Pick<ToolContext, 'callId'>): Promise<CreatedOnce<StoredCall>> {
    return createOnce(this.documents, {
      table: this.table,
      key: 'tenant',
      item: call,
      context,
      stampAttribute: 'logged_by',
    });
  }
}
