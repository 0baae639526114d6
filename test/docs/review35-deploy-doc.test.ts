// Review of issue 35 (h-review35): docs/deploy.md, "Behind an AgentCore Gateway", says what the bundle
// test asserts of a gateway target — compared with the test's own budget, not with a copy of it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BUNDLE_BUDGET_BYTES, GATEWAY_TARGET_BUNDLE_BUDGET_BYTES } from '../infra/entries';

const deploy = readFileSync(join(__dirname, '..', '..', 'docs', 'deploy.md'), 'utf8');
const section = deploy.slice(
  deploy.indexOf('### Behind an AgentCore Gateway'),
  deploy.indexOf('### MCP under a tokenless flood'),
);
const bundles = section.slice(section.indexOf('Bundles:'), section.indexOf('Not done yet:'));

describe('review 35: docs/deploy.md on a gateway target’s bundle', () => {
  it('names the targets’ budget that test/infra/bundle-size.test.ts asserts (the write budget and 1 KB)', () => {
    expect(GATEWAY_TARGET_BUNDLE_BUDGET_BYTES).toBeGreaterThan(BUNDLE_BUDGET_BYTES);
    expect(bundles).not.toMatch(/does not assert/);
    expect(bundles.replaceAll(',', '')).toContain(String(GATEWAY_TARGET_BUNDLE_BUDGET_BYTES));
  });
});
