import { InFlightError, UnavailableError } from 'retrysafe/tools';

/** A contact as the CRM keeps it. */
export interface CrmContact {
  readonly crm_id: string;
  readonly external_id: string;
  readonly name: string;
}

/**
 * The CRM's HTTP API, as a provider that honours idempotency keys (as Stripe does): a request with a key
 * it has seen answers the first result; one whose first request is still running answers 409. Every
 * request carries the call's downstream key, so a crashed call's retry meets its own first request.
 */
export class CrmClient {
  constructor(
    private readonly baseUrl: string,
    private readonly timeoutMs = 3_000,
  ) {}

  async upsertContact(contact: Omit<CrmContact, 'crm_id'>, idempotencyKey: string): Promise<CrmContact> {
    let response: Response;
    try {
      response = await fetch(`${this.baseUrl}/contacts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
        body: JSON.stringify(contact),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new UnavailableError('crm: no answer; retry with the same key', { cause: error });
    }
    if (response.status === 409) {
      // The key's first request is still running at the CRM: the call is pending, never run twice.
      const retryAfterS = Number(response.headers.get('retry-after') ?? 1);
      throw new InFlightError('crm: the contact is still being written', retryAfterS * 1000);
    }
    if (!response.ok) throw new UnavailableError(`crm: answered ${response.status}; retry with the same key`);
    return (await response.json()) as CrmContact;
  }
}
