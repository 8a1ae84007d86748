// Runs the official SDKs, unmodified, against a gateway and prints a JSON
// report on stdout for sdk_test.go to check. Environment:
//   GATEWAY_URL  the gateway's root (http://127.0.0.1:PORT)
//   GATEWAY_KEY  an ordinary key
//   SDK_OPS      the operations to run: upload,list,retrieve,download,delete
//   TOO_LARGE    bytes of the over-limit upload sent through fetch and the
//                Anthropic SDK (0: skip)
import { runAll, clients } from './sdk.mjs';
import { toFile } from '@anthropic-ai/sdk';

const root = process.env.GATEWAY_URL;
const key = process.env.GATEWAY_KEY;
const enabled = new Set((process.env.SDK_OPS ?? '').split(',').filter(Boolean));
const tooLarge = Number(process.env.TOO_LARGE ?? 0);

const report = await runAll(root, key, enabled);

if (tooLarge > 0) {
  // Node's fetch writes the whole body before it reads anything: the 413
  // must still be readable, with its metadata.
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(tooLarge)]), 'big.bin');
  try {
    const res = await fetch(`${root}/api/v1/files`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: form });
    report.push({ sdk: 'fetch', op: 'too-large', ok: true, status: res.status, result: await res.json() });
  } catch (e) {
    report.push({ sdk: 'fetch', op: 'too-large', ok: false, error: `${e} ${e.cause ?? ''}` });
  }
  // The Anthropic SDK retries connection errors, re-sending the body: it
  // must get the 413 at once instead.
  const c = clients(root, key).anthropic;
  try {
    await c.beta.files.upload({ file: await toFile(new Uint8Array(tooLarge), 'big.bin') });
    report.push({ sdk: 'anthropic', op: 'too-large', ok: false, error: 'uploaded' });
  } catch (e) {
    report.push({ sdk: 'anthropic', op: 'too-large', ok: e?.status === 413, status: e?.status ?? null, error: String(e) });
  }
}

process.stdout.write(JSON.stringify(report) + '\n');
