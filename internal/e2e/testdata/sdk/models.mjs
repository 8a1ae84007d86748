// Drives the catalog calls of @openrouter/sdk and of the OpenAI SDK,
// unmodified, against a gateway, and prints a JSON report of each call
// (sdk_models_test.go checks it). Environment: GATEWAY_URL (the root),
// GATEWAY_KEY (a key), MODEL_ID (a model to ask about).
import OpenAI from 'openai';
import { OpenRouter } from '@openrouter/sdk';

const root = process.env.GATEWAY_URL;
const key = process.env.GATEWAY_KEY;
const modelID = process.env.MODEL_ID;
const [author, slug] = modelID.split('/');
const or = new OpenRouter({ apiKey: key, serverURL: `${root}/api/v1` });
const oa = new OpenAI({ apiKey: key, baseURL: `${root}/api/v1`, maxRetries: 0 });
const report = [];

async function step(sdk, op, fn) {
  try {
    report.push({ sdk, op, ok: true, result: await fn() });
  } catch (e) {
    report.push({ sdk, op, ok: false, status: e.statusCode ?? e.status ?? null, error: `${e.name}: ${e.message} ${e.cause?.message ?? ''}`.slice(0, 1500) });
  }
}

// A list call answers a page iterator whose first page is .result.
const first = (r) => r.result ?? r;
const ids = (r) => first(r).data.map((m) => m.id);
await step('openrouter', 'endpoints.list', async () => {
  const r = await or.endpoints.list({ author, slug });
  return { id: r.data.id, endpoints: r.data.endpoints.length };
});
await step('openrouter', 'models.count', async () => (await or.models.count()).data.count);
await step('openrouter', 'models.count(all)', async () => (await or.models.count({ outputModalities: 'all' })).data.count);
await step('openrouter', 'models.list', async () => { const r = first(await or.models.list()); return { n: r.data.length, total: r.totalCount }; });
for (const sort of ['pricing-low-to-high', 'pricing-high-to-low', 'context-high-to-low', 'newest',
  'intelligence-high-to-low', 'coding-high-to-low', 'agentic-high-to-low', 'design-arena-elo-high-to-low']) {
  await step('openrouter', `models.list(sort=${sort})`, async () => ids(await or.models.list({ sort, limit: 5 })));
}
await step('openrouter', 'models.list(filters)', async () =>
  ids(await or.models.list({ supportedParameters: 'tools,temperature', outputModalities: 'text', limit: 1000 })));
await step('openrouter', 'models.list(image)', async () => ids(await or.models.list({ outputModalities: 'image', limit: 1000 })));
await step('openrouter', 'models.list(category)', async () => ids(await or.models.list({ category: 'programming', limit: 3 })));
await step('openrouter', 'models.listForUser', async () => { const p = first(await or.models.listForUser({ bearer: key })); return { n: p.data.length, total: p.totalCount }; });
await step('openai', 'models.list', async () => {
  const out = [];
  for await (const m of oa.models.list()) out.push({ id: m.id, object: m.object, owned_by: m.owned_by });
  return out;
});
await step('openai', 'models.retrieve', async () => {
  const m = await oa.models.retrieve(modelID);
  return { id: m.id, object: m.object, owned_by: m.owned_by, created: m.created };
});
process.stdout.write(JSON.stringify(report));
