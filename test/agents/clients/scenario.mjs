// The one scenario every client script runs against retrysafe's /mcp, and how it talks to the test that
// forked it. A client script supplies an adapter — how its framework lists the tools and what one tool call
// hands the model — and the scenario does the rest: a write, its replay, a conflict, a refusal, and a call
// made again while the first is still in flight (the test holds the payment provider and says when).
//
// Settings come from the environment: RETRYSAFE_MCP_URL, RETRYSAFE_TOKEN, RETRYSAFE_INVOICE (an invoice
// whose refund the test's fake Stripe will hold) and RETRYSAFE_KEYS (a prefix for this run's keys).

/** The settings the test passed. */
export function settings() {
  const { RETRYSAFE_MCP_URL: url, RETRYSAFE_TOKEN: token, RETRYSAFE_INVOICE: invoice } = process.env;
  if (!url || !token || !invoice)
    throw new Error('RETRYSAFE_MCP_URL, RETRYSAFE_TOKEN and RETRYSAFE_INVOICE are required');
  return {
    url,
    token,
    invoice,
    keys: process.env.RETRYSAFE_KEYS ?? 'k',
    amount: Number(process.env.RETRYSAFE_AMOUNT ?? 4200),
  };
}

/** The next message from the test with this `step`. */
function told(step) {
  if (!process.send) return Promise.resolve(); // run by hand: nothing holds the provider
  return new Promise((resolve) => {
    process.on('message', function onMessage(message) {
      if (message?.step !== step) return;
      process.off('message', onMessage);
      resolve(message);
    });
  });
}

/**
 * Runs the scenario through `adapter` and sends the test what the model was handed at each step:
 * `{ tools, first, replay, conflict, invalid, pending, held, operation }`, and whatever `adapter.more` adds.
 *
 * @param adapter.tools () => the tool names as the framework offers them to the model
 * @param adapter.see (name, args) => what the framework hands the model for this call (JSON-serialisable)
 * @param adapter.more optional, () => more steps of the client's own, as an object merged into what is sent
 * @param adapter.close () => releases the client
 */
export async function run(adapter) {
  const { invoice, keys, amount } = settings();
  const seen = {};
  try {
    seen.tools = await adapter.tools();

    const write = { idempotency_key: `${keys}-invoice`, customer: 'cus_ada', amount: 1234 };
    seen.first = await adapter.see('create_invoice', write);
    seen.replay = await adapter.see('create_invoice', write);
    seen.conflict = await adapter.see('create_invoice', { ...write, amount: 999 });
    // Valid for every client's schema, refused by the server: a refund is a full refund.
    seen.invalid = await adapter.see('refund', { idempotency_key: `${keys}-partial`, invoice_id: invoice, amount: 1 });

    // The first refund waits at the payment provider until the test releases it; the same call again
    // meanwhile is answered `pending`.
    const refund = { idempotency_key: `${keys}-refund`, invoice_id: invoice, amount };
    const arrived = told('arrived');
    const held = adapter.see('refund', refund);
    // Should the first call be answered without reaching the provider, go on: what it saw says why.
    await Promise.race([arrived, held]);
    seen.pending = await adapter.see('refund', refund);
    process.send?.({ step: 'release' });
    seen.held = await held;
    seen.operation = await adapter.see('get_operation', { tool: 'refund', idempotency_key: refund.idempotency_key });
    if (adapter.more) Object.assign(seen, await adapter.more());
  } catch (error) {
    seen.error = String(error?.stack ?? error);
  } finally {
    await adapter.close().catch(() => {});
  }
  if (process.send) process.send({ step: 'seen', seen }, () => process.exit(0));
  else {
    console.log(JSON.stringify(seen, null, 2));
    process.exit(0);
  }
}
