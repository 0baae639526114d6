import { type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { type CallRecord, callIdOf, decodeCall, decodeOutcome } from '../call-state';
import type { RecordAttributes } from '../record';

/**
 * Reads call records (typed by `call-state`) for everyone who needs one outside a claim: the poll,
 * the completer, a dedupe window's intent and erase (whose writes are in `erasure.ts`).
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
    stalledClaim: text(attr.stalledClaim),
  };
}
