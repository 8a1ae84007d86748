// Drives @openrouter/sdk's apiKeys and byok calls, unmodified, against a
// gateway and prints a JSON report of each call (sdk_keys_test.go checks
// it). Environment: GATEWAY_URL (the root), GATEWAY_KEY (a management key).
import { OpenRouter } from '@openrouter/sdk';

const root = process.env.GATEWAY_URL;
const admin = new OpenRouter({ apiKey: process.env.GATEWAY_KEY, serverURL: `${root}/api/v1` });
const report = [];

async function step(op, fn) {
  try {
    report.push({ sdk: 'openrouter', op, ok: true, result: await fn() });
  } catch (e) {
    report.push({ sdk: 'openrouter', op, ok: false, status: e.statusCode ?? null, error: `${e.name}: ${e.message}` });
  }
}

const created = await admin.apiKeys.create({ requestBody: { name: 'from the sdk', limit: 12.5, limitReset: 'weekly' } })
  .catch((e) => { report.push({ sdk: 'openrouter', op: 'apiKeys.create', ok: false, status: e.statusCode ?? null, error: `${e.name}: ${e.message}` }); return null; });
if (created) {
  report.push({ sdk: 'openrouter', op: 'apiKeys.create', ok: true, result: created });
  const hash = created.data.hash;
  await step('apiKeys.list', async () => (await admin.apiKeys.list({ includeDisabled: true })).data.map((k) => k.hash));
  await step('apiKeys.get', async () => (await admin.apiKeys.get({ hash })).data);
  await step('apiKeys.update', async () => (await admin.apiKeys.update({ hash, requestBody: { disabled: true, limit: null } })).data);
  const own = new OpenRouter({ apiKey: created.key, serverURL: `${root}/api/v1` });
  await step('apiKeys.getCurrentKeyMetadata(admin)', async () => (await admin.apiKeys.getCurrentKeyMetadata()).data);
  await step('apiKeys.update(enable)', async () => (await admin.apiKeys.update({ hash, requestBody: { disabled: false } })).data);
  await step('apiKeys.getCurrentKeyMetadata(own)', async () => (await own.apiKeys.getCurrentKeyMetadata()).data);
  await step('apiKeys.delete', async () => await admin.apiKeys.delete({ hash }));
}

await step('byok.create', async () => (await admin.byok.create({ createBYOKKeyRequest: { provider: 'openai', key: 'sk-test-0123456789abcdef', name: 'prod' } })).data);
const made = report.at(-1).ok ? report.at(-1).result.id : null;
if (made) {
  await step('byok.list', async () => {
    const ids = [];
    for await (const page of await admin.byok.list({ limit: 1 })) ids.push(...page.result.data.map((k) => k.id));
    return ids;
  });
  await step('byok.get', async () => (await admin.byok.get({ id: made })).data);
  await step('byok.update', async () => (await admin.byok.update({ id: made, updateBYOKKeyRequest: { name: 'rotated', key: 'sk-test-rotated-99999999' } })).data);
  await step('byok.delete', async () => await admin.byok.delete({ id: made }));
}
// Spend: a key's limit set through apiKeys.update, and the four budget calls.
const limited = await admin.apiKeys.create({ requestBody: { name: 'limited' } }).catch(() => null);
if (limited) {
  await step('apiKeys.update(limit)', async () => (await admin.apiKeys.update({ hash: limited.data.hash, requestBody: { limit: 2.5, limitReset: 'daily' } })).data);
}
await step('workspaces.setBudget', async () => await admin.workspaces.setBudget({ workspaceRef: 'default', interval: 'weekly', upsertWorkspaceBudgetRequest: { limitUsd: 10, includeByokInBudgets: true } }));
await step('workspaces.setBudget(lifetime)', async () => await admin.workspaces.setBudget({ workspaceRef: 'default', interval: 'lifetime', upsertWorkspaceBudgetRequest: { limitUsd: 100 } }));
await step('workspaces.getBudget', async () => await admin.workspaces.getBudget({ workspaceRef: 'default', interval: 'weekly' }));
await step('workspaces.listBudgets', async () => await admin.workspaces.listBudgets({ workspaceRef: 'default' }));
await step('workspaces.deleteBudget', async () => await admin.workspaces.deleteBudget({ workspaceRef: 'default', interval: 'weekly' }));
process.stdout.write(JSON.stringify(report));
