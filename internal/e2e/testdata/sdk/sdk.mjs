// Drives the official Node SDKs, unmodified, against a gateway: each SDK
// uploads, lists (auto-paging), retrieves, downloads and deletes files the
// way its README shows. Used two ways:
//   - run.mjs runs it against a real gateway (sdk_test.go);
//   - capture.mjs runs it against a recording server to refresh requests/.
// Every operation's result is reported as JSON for the Go side to check
// against the SDK's schema; nothing here decides pass or fail beyond the
// SDK's own behaviour (a thrown error is a failed operation).
import OpenAI, { toFile } from 'openai';
import Anthropic, { toFile as anthropicToFile } from '@anthropic-ai/sdk';
import { OpenRouter } from '@openrouter/sdk';

// The base URL each SDK is given, from the gateway's root (README: "Using
// the official SDKs"). The Anthropic SDKs append /v1/files themselves.
export const baseURLs = (root) => ({
  openai: `${root}/api/v1`,
  anthropic: `${root}/api`,
  openrouter: `${root}/api/v1`,
});

export function clients(root, key) {
  const base = baseURLs(root);
  return {
    openai: new OpenAI({ apiKey: key, baseURL: base.openai, maxRetries: 2 }),
    anthropic: new Anthropic({ apiKey: key, baseURL: base.anthropic, maxRetries: 2 }),
    openrouter: new OpenRouter({ apiKey: key, serverURL: base.openrouter }),
  };
}

const text = (sdk, i) => `hello from the ${sdk} SDK, file ${i}\n`;

async function readStream(stream) {
  return await new Response(stream).text();
}

// The operations of each SDK. upload returns the file; list returns every
// file seen across the pages; the others take the id of an uploaded file.
export const operations = {
  openai: {
    upload: async (c, i) =>
      c.files.create({ file: await toFile(Buffer.from(text('openai', i)), `notes-${i}.txt`), purpose: 'assistants' }),
    list: async (c) => {
      const seen = [];
      for await (const f of c.files.list({ limit: 2 })) seen.push(f);
      return seen;
    },
    retrieve: (c, id) => c.files.retrieve(id),
    download: async (c, id) => (await c.files.content(id)).text(),
    delete: (c, id) => c.files.delete(id),
  },
  anthropic: {
    upload: async (c, i) =>
      c.beta.files.upload({ file: await anthropicToFile(Buffer.from(text('anthropic', i)), `notes-${i}.txt`, { type: 'text/plain' }) }),
    list: async (c) => {
      const seen = [];
      for await (const f of c.beta.files.list({ limit: 2 })) seen.push(f);
      return seen;
    },
    retrieve: (c, id) => c.beta.files.retrieveMetadata(id),
    download: async (c, id) => (await c.beta.files.download(id)).text(),
    delete: (c, id) => c.beta.files.delete(id),
  },
  openrouter: {
    upload: (c, i) =>
      c.files.upload({ requestBody: { file: { fileName: `notes-${i}.txt`, content: new TextEncoder().encode(text('openrouter', i)) } } }),
    list: async (c) => {
      const seen = [];
      for await (const page of await c.files.list({ limit: 2 })) seen.push(...plain(page.result).data);
      return seen;
    },
    retrieve: (c, id) => c.files.retrieve({ fileId: id }),
    download: async (c, id) => readStream(await c.files.download({ fileId: id })),
    delete: (c, id) => c.files.delete({ fileId: id }),
  },
};

// The @openrouter/sdk parses answers with its own schemas: an answer whose
// `_shape` it does not know (ours says "service" where the original service
// says its own name) comes back as {raw, isUnknown: true}. Report what the
// server sent either way.
function plain(v) {
  if (v && typeof v === 'object' && v.isUnknown && 'raw' in v) return v.raw;
  return v;
}

// runAll runs every enabled operation of every SDK in order (uploads of
// three files, list, retrieve, download, delete of the first) and reports
// each step. onStep is told the SDK and operation before each call (the
// recorder labels requests with it).
export async function runAll(root, key, enabled, onStep = () => {}) {
  const cs = clients(root, key);
  const report = [];
  for (const [sdk, ops] of Object.entries(operations)) {
    const c = cs[sdk];
    const ids = [];
    const step = async (op, fn) => {
      if (!enabled.has(op)) return;
      onStep(sdk, op);
      try {
        const result = await fn();
        report.push({ sdk, op, ok: true, result: Array.isArray(result) ? result.map(plain) : plain(result) });
        return result;
      } catch (e) {
        report.push({ sdk, op, ok: false, error: String(e), status: e?.status ?? e?.statusCode ?? null });
      }
    };
    for (let i = 1; i <= 3; i++) {
      const f = await step('upload', () => ops.upload(c, i));
      const id = plain(f)?.id;
      if (id) ids.push(id);
    }
    const id = ids[0] ?? 'file-missing';
    await step('list', () => ops.list(c));
    await step('retrieve', () => ops.retrieve(c, id));
    await step('download', () => ops.download(c, id));
    await step('delete', () => ops.delete(c, id));
  }
  return report;
}
