import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { StripeApiBase } from '../../app/payments/stripe';
import { gate } from './tools';

/** A refund as the fake holds it: the fields of Stripe's refund object the provider reads. */
export interface FakeRefund {
  readonly id: string;
  readonly object: 'refund';
  readonly amount: number;
  readonly currency: string;
  readonly created: number;
  readonly status: 'succeeded';
  readonly payment_intent: string;
  readonly metadata: Readonly<Record<string, string>>;
}

/** What the fake did with one `POST /v1/refunds`. */
export type Outcome =
  | 'created'
  | 'replayed'
  | 'key_in_use'
  | 'key_mismatch'
  | 'already_refunded'
  | 'no_such_payment_intent'
  | 'unauthorized'
  | 'server_error'
  | 'closed'
  | 'response_lost';

/** One `POST /v1/refunds` as the SDK sent it, and what the fake answered. */
export interface ReceivedRefund {
  readonly idempotencyKey: string | undefined;
  readonly authorization: string | undefined;
  /** The form fields as sent, `metadata[...]` flattened the way Stripe's form encoding writes them. */
  readonly params: Readonly<Record<string, string>>;
  outcome?: Outcome;
}

/** A failure the next request meets: a 5xx, a connection closed before Stripe ran, a response lost after. */
export type Fault = 'server_error' | 'close' | 'lose_response';

interface StoredResult {
  readonly fingerprint: string;
  readonly status: number;
  readonly body: unknown;
}

/**
 * A local HTTP server that answers the Stripe endpoints the provider uses (`POST /v1/refunds`,
 * `GET /v1/refunds`) with Stripe's idempotency semantics:
 *
 * - same `Idempotency-Key`, same parameters: the stored response again, with `Idempotent-Replayed: true`;
 * - same key, other parameters: 400 `idempotency_error`;
 * - a key whose first request is still running: 409 `idempotency_key_in_use`.
 *
 * Only successes are stored (Stripe stores every result of a request that started executing; the
 * provider's tests need no replayed error). Emits `received` (a `ReceivedRefund`) for every request, so
 * a test waits on what the fake saw instead of sleeping.
 */
export class FakeStripe extends EventEmitter {
  /** Every `POST /v1/refunds`, in arrival order: the SDK's attempts, retries included. */
  readonly received: ReceivedRefund[] = [];
  /** Every refund that exists: money that moved. */
  readonly refunds: FakeRefund[] = [];
  readonly #payments = new Map<string, { amount: number; currency: string }>();
  readonly #results = new Map<string, StoredResult>();
  readonly #running = new Set<string>();
  readonly #faults: Fault[] = [];
  #holds: Array<{ arrived: () => void; released: Promise<void> }> = [];

  private constructor(
    private readonly server: Server,
    /** The only secret key the fake accepts. */
    readonly apiKey: string,
  ) {
    super();
  }

  static async start(apiKey = `sk_test_${randomBytes(8).toString('hex')}`): Promise<FakeStripe> {
    const server = createServer();
    const fake = new FakeStripe(server, apiKey);
    server.on('request', function onRequest(request, response) {
      fake.#answer(request, response).catch((error: unknown) => {
        response.destroy(error as Error);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    return fake;
  }

  /** Where the SDK should send its requests. */
  get apiBase(): StripeApiBase {
    return { protocol: 'http', host: '127.0.0.1', port: (this.server.address() as AddressInfo).port };
  }

  /** The same, as `STRIPE_API_BASE` gives it. */
  get url(): string {
    return `http://127.0.0.1:${this.apiBase.port}`;
  }

  /** A PaymentIntent that was paid, so refunds against it succeed. */
  addPaymentIntent(id: string, payment: { amount: number; currency: string }): void {
    this.#payments.set(id, payment);
  }

  /** A refund made outside retrysafe (the dashboard): it carries none of retrysafe's metadata. */
  addRefund(paymentIntent: string): FakeRefund {
    const payment = this.#payments.get(paymentIntent);
    if (!payment) throw new Error(`fake stripe: no payment intent ${paymentIntent}`);
    return this.#createRefund(paymentIntent, payment.amount, payment.currency, {});
  }

  /** The next `times` refund requests meet `fault`. */
  failNext(fault: Fault, times = 1): void {
    for (let i = 0; i < times; i += 1) this.#faults.push(fault);
  }

  /**
   * The next refund request stays running until `release()`: `arrived` settles when it is in, and
   * meanwhile its key answers 409.
   */
  holdNext(): { arrived: Promise<void>; release: () => void } {
    const arrival = gate();
    const release = gate();
    this.#holds.push({ arrived: arrival.open, released: release.opened });
    return { arrived: arrival.opened, release: release.open };
  }

  /** Stripe prunes idempotency keys after 24 hours: what it stored is gone, the refunds stay. */
  forgetKeys(): void {
    this.#results.clear();
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve, reject) => this.server.close((error) => (error ? reject(error) : resolve())));
  }

  async #answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const url = new URL(request.url ?? '/', 'http://fake');
    const body = await textOf(request);
    if (request.headers.authorization !== `Bearer ${this.apiKey}`) {
      if (request.method === 'POST') this.#receive(request, body).outcome = 'unauthorized';
      return send(response, 401, stripeError('invalid_request_error', undefined, 'Invalid API Key provided'));
    }
    if (request.method === 'GET' && url.pathname === '/v1/refunds') return this.#list(url, response);
    if (request.method === 'POST' && url.pathname === '/v1/refunds') return this.#create(request, body, response);
    return send(response, 404, stripeError('invalid_request_error', undefined, `Unrecognized request URL`));
  }

  #receive(request: IncomingMessage, body: string): ReceivedRefund {
    const received: ReceivedRefund = {
      idempotencyKey: headerOf(request, 'idempotency-key'),
      authorization: request.headers.authorization,
      params: Object.fromEntries(new URLSearchParams(body)),
    };
    this.received.push(received);
    this.emit('received', received);
    return received;
  }

  async #create(request: IncomingMessage, body: string, response: ServerResponse): Promise<void> {
    const received = this.#receive(request, body);
    const fault = this.#faults.shift();
    if (fault === 'server_error') {
      received.outcome = 'server_error';
      return send(response, 500, stripeError('api_error', undefined, 'An unknown error occurred'));
    }
    if (fault === 'close') {
      received.outcome = 'closed';
      response.destroy();
      return;
    }
    const key = received.idempotencyKey;
    const fingerprint = `POST /v1/refunds ${new URLSearchParams([...new URLSearchParams(body)].sort()).toString()}`;
    if (key !== undefined) {
      if (this.#running.has(key)) {
        received.outcome = 'key_in_use';
        return send(
          response,
          409,
          stripeError(
            'idempotency_error',
            'idempotency_key_in_use',
            'There is currently another in-progress request using this idempotency key',
          ),
        );
      }
      const stored = this.#results.get(key);
      if (stored && stored.fingerprint !== fingerprint) {
        received.outcome = 'key_mismatch';
        return send(
          response,
          400,
          stripeError(
            'idempotency_error',
            undefined,
            `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
          ),
        );
      }
      if (stored) {
        received.outcome = 'replayed';
        return send(response, stored.status, stored.body, { 'Idempotent-Replayed': 'true' });
      }
      this.#running.add(key);
    }
    try {
      const hold = this.#holds.shift();
      if (hold) {
        hold.arrived();
        await hold.released;
      }
      const params = received.params;
      const paymentIntent = params.payment_intent ?? '';
      const payment = this.#payments.get(paymentIntent);
      if (!payment) {
        received.outcome = 'no_such_payment_intent';
        return send(
          response,
          404,
          stripeError('invalid_request_error', 'resource_missing', `No such payment_intent: '${paymentIntent}'`),
        );
      }
      if (this.refunds.some((refund) => refund.payment_intent === paymentIntent)) {
        received.outcome = 'already_refunded';
        return send(
          response,
          400,
          stripeError('invalid_request_error', 'charge_already_refunded', 'Charge has already been refunded.'),
        );
      }
      const metadata = Object.fromEntries(
        Object.entries(params).flatMap(([field, value]) => {
          const name = /^metadata\[(.+)\]$/.exec(field)?.[1];
          return name === undefined ? [] : [[name, value]];
        }),
      );
      const refund = this.#createRefund(
        paymentIntent,
        Number(params.amount ?? payment.amount),
        payment.currency,
        metadata,
      );
      if (key !== undefined) this.#results.set(key, { fingerprint, status: 200, body: refund });
      if (fault === 'lose_response') {
        // Stripe refunded; the answer never arrives.
        received.outcome = 'response_lost';
        response.destroy();
        return;
      }
      received.outcome = 'created';
      return send(response, 200, refund);
    } finally {
      if (key !== undefined) this.#running.delete(key);
    }
  }

  #list(url: URL, response: ServerResponse): void {
    const paymentIntent = url.searchParams.get('payment_intent');
    const data = this.refunds.filter((refund) => paymentIntent === null || refund.payment_intent === paymentIntent);
    send(response, 200, { object: 'list', data, has_more: false, url: '/v1/refunds' });
  }

  #createRefund(paymentIntent: string, amount: number, currency: string, metadata: Record<string, string>): FakeRefund {
    const refund: FakeRefund = {
      id: `re_${randomBytes(12).toString('hex')}`,
      object: 'refund',
      amount,
      currency,
      created: Math.floor(Date.now() / 1000),
      status: 'succeeded',
      payment_intent: paymentIntent,
      metadata,
    };
    this.refunds.push(refund);
    return refund;
  }
}

function stripeError(type: string, code: string | undefined, message: string) {
  return { error: { type, ...(code ? { code } : {}), message } };
}

function send(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, {
    'Content-Type': 'application/json',
    'Request-Id': `req_${randomBytes(8).toString('hex')}`,
    ...headers,
  });
  response.end(JSON.stringify(body));
}

function headerOf(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

async function textOf(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
