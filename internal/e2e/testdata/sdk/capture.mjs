// Refreshes requests/<sdk>.json: runs sdk.mjs against a local recording
// server and stores each request the SDKs send (method, path, query,
// headers, raw body), so sdk_test.go can replay them against the gateway
// without Node. Run from a directory holding node_modules with the SDKs of
// package.json (sdk_test.go installs them under .testenv/sdk-node):
//   cp *.mjs ../../../../.testenv/sdk-node/ && cd ../../../../.testenv/sdk-node && \
//     node capture.mjs ../../internal/e2e/testdata/sdk/requests
// The recorder answers like the original services do (their documented
// shapes), so each SDK goes on to its next request, including the second
// page of a list.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { runAll } from './sdk.mjs';

const outDir = process.argv[2];
if (!outDir) {
  console.error('usage: node capture.mjs OUTDIR');
  process.exit(2);
}
const KEY = 'sk-gw-capture-placeholder';
const created = 1767225600; // 2026-01-01T00:00:00Z
let current = { sdk: '', op: '' };
const recorded = {};

function file(sdk, id) {
  switch (sdk) {
    case 'openai':
      return { id, object: 'file', bytes: 32, created_at: created, filename: 'notes-1.txt', purpose: 'assistants', status: 'processed' };
    case 'anthropic':
      return { id, type: 'file', filename: 'notes-1.txt', mime_type: 'text/plain', size_bytes: 32, created_at: '2026-01-01T00:00:00Z', downloadable: true };
    default:
      return { _shape: 'openrouter', id, type: 'file', filename: 'notes-1.txt', mime_type: 'text/plain', size_bytes: 32, downloadable: true, created_at: '2026-01-01T00:00:00Z' };
  }
}

function answer(sdk, method, url) {
  const u = new URL(url, 'http://x');
  const m = u.pathname.match(/\/files(?:\/([^/]+))?(\/content)?$/);
  const id = m?.[1];
  // The original service's download is application/octet-stream, the only
  // type @openrouter/sdk accepts there.
  if (m?.[2]) return { type: sdk === 'openrouter' ? 'application/octet-stream' : 'text/plain', body: 'hello\n' };
  if (method === 'POST') return { body: file(sdk, 'file-1') };
  if (method === 'DELETE') {
    return { body: sdk === 'openai' ? { id, object: 'file', deleted: true } : sdk === 'anthropic' ? { id, type: 'file_deleted' } : { _shape: 'openrouter', id, type: 'file_deleted' } };
  }
  if (id) return { body: file(sdk, id) };
  // A list: two pages, so the SDK's auto-paging shows what it sends next.
  const second = ['after', 'after_id', 'page', 'cursor'].some((p) => u.searchParams.has(p));
  const data = second ? [file(sdk, 'file-3')] : [file(sdk, 'file-1'), file(sdk, 'file-2')];
  const page = { data, has_more: !second, first_id: data[0].id, last_id: data.at(-1).id };
  if (sdk === 'openai') return { body: { object: 'list', ...page } };
  if (sdk === 'anthropic') return { body: { ...page, next_page: second ? null : 'page-2' } };
  return { body: { _shape: 'openrouter', ...page, cursor: second ? null : 'page-2' } };
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const u = new URL(req.url, 'http://x');
    const headers = {};
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i];
      let value = req.rawHeaders[i + 1];
      if (/^host$/i.test(name)) value = '{host}';
      value = value.replaceAll(KEY, '{key}');
      headers[name] = value;
    }
    const { sdk, op } = current;
    (recorded[sdk] ??= []).push({
      op, method: req.method, path: u.pathname, query: u.search.replace(/^\?/, ''), headers,
      body: Buffer.concat(chunks).toString('utf8'),
    });
    const a = answer(sdk, req.method, req.url);
    res.writeHead(200, { 'content-type': a.type ?? 'application/json' });
    res.end(typeof a.body === 'string' ? a.body : JSON.stringify(a.body));
  });
});

server.listen(0, '127.0.0.1', async () => {
  const root = `http://127.0.0.1:${server.address().port}`;
  const report = await runAll(root, KEY, new Set(['upload', 'list', 'retrieve', 'download', 'delete']), (sdk, op) => {
    current = { sdk, op };
  });
  server.close();
  const failed = report.filter((r) => !r.ok);
  if (failed.length) {
    console.error('operations failed against the recorder:', JSON.stringify(failed, null, 2));
    process.exit(1);
  }
  fs.mkdirSync(outDir, { recursive: true });
  for (const [sdk, requests] of Object.entries(recorded)) {
    fs.writeFileSync(path.join(outDir, `${sdk}-node.json`), JSON.stringify(requests, null, 2) + '\n');
  }
  console.log(`recorded ${Object.values(recorded).flat().length} requests into ${outDir}`);
});
