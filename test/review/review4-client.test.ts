// Review 4 (h-review4): a failing test for the typed client and `runs_anew` — not fixed.
import { PutItemCommand } from '@aws-sdk/client-dynamodb';
import { RetrysafeClient } from '../../lib/client';
import { recordKeyOf, validationOf } from '../../lib/idempotency/derivation';
import { fingerprint } from '../../lib/idempotency/fingerprint';
import { idempotencyTableName } from '../../lib/store/tables';
import { startTestApi, type TestApi } from '../helpers/api';
import { ownIdempotencyTable } from '../helpers/own-table';
import { newTenant } from '../helpers/world';

// Tenantless records (Powertools' handler's): a table of the suite's own (rule 6), as answer-waits.test.ts does.
ownIdempotencyTable('review4-client');
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

describe('review 4: the typed client and a call Powertools’ handler holds (runs_anew)', () => {
  it('RetrysafeClient.call reads the 202 pending runs_anew answer as "still runs", waits its hint, resends past the TTL and runs the call anew — the server said "check the effect first"', async () => {
    const tenant = newTenant('r4c');
    const key = `r4c-${Date.now()}`;
    const args = { to: 'a@example.com', subject: 's', body: 'b' };
    // What Powertools' handler leaves when its worker died mid-call (its effect may have happened): its lock
    // ended, its TTL 3 s away.
    await api.services.client.send(
      new PutItemCommand({
        TableName: idempotencyTableName(),
        Item: {
          id: { S: recordKeyOf('send_email', [tenant, 'ada', key]) },
          status: { S: 'INPROGRESS' },
          expiration: { N: String(Math.round(Date.now() / 1000) + 3) },
          in_progress_expiration: { N: String(Date.now() - 5_000) },
          validation: { S: validationOf(fingerprint(args)) },
        },
      }),
    );
    const first = await api.post('/tools/send_email', await api.token(tenant), { idempotency_key: key, ...args });
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ status: 'pending', runs_anew: true });

    const client = new RetrysafeClient({
      baseUrl: api.url,
      token: await api.token(tenant),
      retry: { baseDelayMs: 10, maxDelayMs: 50 },
    });
    const answered = await client.call('send_email', args, { key, deadlineMs: 10_000 }).then(
      (value) => ({ resolved: value }),
      (error: unknown) => ({ rejected: String(error) }),
    );

    // It must not run the call anew on its own: the caller has to check the effect first.
    expect(answered).not.toMatchObject({ resolved: { ok: true, idempotent: false } });
  });
});
