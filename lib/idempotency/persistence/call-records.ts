import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { type CallRecord, callIdOf, decodeCall, decodeOutcome, STATUS } from '../call-state';
import type { RecordAttributes } from '../record';

/**
 * Reads call records (typed by `call-state`) for everyone who needs one outside a claim — the poll,
 * the completer, a dedupe window's intent and erase — and makes erase's two transitions of
 * docs/state-machine.md (rule 6): a completed record to a tombstone, an expired one deleted.
 */
export class CallRecords {
  readonly #client: DynamoDBClient;
  readonly #tableName: string;
  readonly #attr: RecordAttributes;

  constructor(client: DynamoDBClient, tableName: string, attributes: RecordAttributes) {
    this.#client = client;
    this.#tableName = tableName;
    this.#attr = attributes;
  }

  /** The record under `key`, read consistently, or undefined. */
  async read(key: string): Promise<CallRecord | undefined> {
    const { Item } = await this.#client.send(
      new GetItemCommand({
        TableName: this.#tableName,
        Key: { [this.#attr.key]: { S: key } },
        ConsistentRead: true,
      }),
    );
    return Item ? this.fromItem(unmarshall(Item)) : undefined;
  }

  /**
   * completed → erased: the outcome, the arguments, the hashes and the claim go (no write conditioned on
   * a claim — a late store, a park — can touch a tombstone, and no claim or takeover passes it until its
   * TTL). `changed` when the record is no longer completed (deleted by its TTL, or claimed again).
   */
  async tombstone(key: string): Promise<'erased' | 'changed'> {
    return this.#conditionally(
      new UpdateItemCommand({
        TableName: this.#tableName,
        Key: { [this.#attr.key]: { S: key } },
        UpdateExpression: 'SET #status = :erased REMOVE #data, #call, #validation, #downstream, #claim',
        ConditionExpression: '#status = :completed',
        ExpressionAttributeNames: {
          '#status': this.#attr.status,
          '#data': this.#attr.data,
          '#call': this.#attr.call,
          '#validation': this.#attr.validation,
          '#downstream': this.#attr.downstreamKey,
          '#claim': this.#attr.claim,
        },
        ExpressionAttributeValues: { ':erased': { S: STATUS.erased }, ':completed': { S: STATUS.completed } },
      }),
    );
  }

  /** expired → absent, ahead of DynamoDB's TTL sweep; `changed` when its expiry moved on meanwhile. */
  async deleteExpired(key: string, nowMs: number): Promise<'erased' | 'changed'> {
    return this.#conditionally(
      new DeleteItemCommand({
        TableName: this.#tableName,
        Key: { [this.#attr.key]: { S: key } },
        ConditionExpression: '#expiry < :now',
        ExpressionAttributeNames: { '#expiry': this.#attr.expiry },
        ExpressionAttributeValues: { ':now': { N: String(nowMs / 1000) } },
      }),
    );
  }

  async #conditionally(command: UpdateItemCommand | DeleteItemCommand): Promise<'erased' | 'changed'> {
    try {
      await this.#client.send(command as UpdateItemCommand);
      return 'erased';
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return 'changed';
      throw error;
    }
  }

  /** A table item (unmarshalled) as a typed record. */
  fromItem(item: Record<string, unknown>): CallRecord {
    return callRecordOf(item, this.#attr);
  }
}

/** A table item (unmarshalled) as a typed record, with the table's attribute names. */
export function callRecordOf(item: Record<string, unknown>, attr: RecordAttributes): CallRecord {
  const text = (name: string) => (typeof item[name] === 'string' ? (item[name] as string) : undefined);
  const number = (name: string) => (typeof item[name] === 'number' ? (item[name] as number) : undefined);
  const key = String(item[attr.key]);
  return {
    key,
    callId: callIdOf(key, text(attr.callInstance)),
    status: text(attr.status),
    claim: text(attr.claim),
    lockEndsMs: number(attr.inProgressExpiry),
    expiresAt: number(attr.expiry),
    validation: text(attr.validation),
    tenant: text(attr.tenant),
    tool: text(attr.tool),
    call: decodeCall(item[attr.call]),
    downstreamKey: text(attr.downstreamKey),
    attempt: number(attr.attempt) ?? 1,
    outcome: decodeOutcome(item[attr.data]),
  };
}
