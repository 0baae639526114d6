import { RemovalPolicy } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { IDEMPOTENCY_TABLE } from '../store/tables';
import { tableFromDefinition } from './table';

export interface IdempotencyTableProps {
  /**
   * Delete the table (and every stored receipt) when the stack is deleted.
   * @default false (the table is retained)
   */
  readonly destroyOnRemoval?: boolean;
  /**
   * DynamoDB's deletion protection on the table (`definedTable`'s `deletionProtection`).
   * @default true, unless `destroyOnRemoval`
   */
  readonly deletionProtection?: boolean;
}

/** The DynamoDB actions the idempotency runtime sends: claim, read, complete, release. */
export const CLAIM_ACTIONS = ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'];

/**
 * The idempotency table: the table from the shared definition (`id` partition key, TTL on
 * `expiration`, a stream for the completer), on demand, with point-in-time recovery and encryption at rest,
 * retained and deletion-protected by default. Usable on its own by anyone wrapping their own tools.
 */
export class IdempotencyTable extends Construct {
  /** The idempotency table. */
  public readonly table: dynamodb.Table;

  constructor(scope: Construct, id: string, props: IdempotencyTableProps = {}) {
    super(scope, id);
    this.table = tableFromDefinition(this, 'Table', IDEMPOTENCY_TABLE, {
      removalPolicy: props.destroyOnRemoval ? RemovalPolicy.DESTROY : RemovalPolicy.RETAIN,
      ...(props.deletionProtection === undefined ? {} : { deletionProtection: props.deletionProtection }),
    });
  }

  /** Lets `grantee` claim, read, complete and release records — on the table only, not its index. */
  grantClaims(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({ grantee, actions: CLAIM_ACTIONS, resourceArns: [this.table.tableArn] });
  }

  /** Lets `grantee` find records by scanning and delete them (tenant erase). */
  grantErase(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({
      grantee,
      // Scan finds the tenant's records; GetItem reads the call behind an intent or a domain item;
      // UpdateItem turns a completed record into a tombstone; DeleteItem removes intents and expired records.
      actions: ['dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:Scan', 'dynamodb:UpdateItem'],
      resourceArns: [this.table.tableArn],
    });
  }

  /** Lets `grantee` read records (the operations poll). */
  grantRead(grantee: iam.IGrantable): iam.Grant {
    return iam.Grant.addToPrincipal({ grantee, actions: ['dynamodb:GetItem'], resourceArns: [this.table.tableArn] });
  }
}
