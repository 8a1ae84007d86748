// Drives OpenAI's Uploads resource through the official Node SDK,
// unmodified, as its README shows: create an upload, send its parts at
// once, complete it with the parts in order and the file's md5, read the
// file back; then cancel a second upload. Prints a JSON report of each
// step on stdout for sdk_uploads_test.go. Environment:
//   GATEWAY_URL  the gateway's root (http://127.0.0.1:PORT)
//   GATEWAY_KEY  an ordinary key
//   PART_BYTES   the size of each part but the last
//   PARTS        how many parts
import { createHash } from 'node:crypto';
import { toFile } from 'openai';
import { clients } from './sdk.mjs';

const root = process.env.GATEWAY_URL;
const key = process.env.GATEWAY_KEY;
const partBytes = Number(process.env.PART_BYTES);
const parts = Number(process.env.PARTS);
const c = clients(root, key).openai;
const report = [];

async function step(op, fn) {
  try {
    const result = await fn();
    report.push({ sdk: 'openai', op, ok: true, result });
    return result;
  } catch (e) {
    report.push({ sdk: 'openai', op, ok: false, status: e?.status ?? null, error: String(e) });
    return null;
  }
}

// A text file whose every line is different, so a part out of place
// changes the md5.
const size = partBytes * (parts - 1) + 100;
const lines = [];
for (let i = 0, n = 0; n < size; i++) {
  const line = `line ${i} of the dataset\n`;
  lines.push(line);
  n += line.length;
}
const data = Buffer.from(lines.join('')).subarray(0, size);
const md5 = createHash('md5').update(data).digest('hex');

const upload = await step('create', () =>
  c.uploads.create({ bytes: data.length, filename: 'dataset.jsonl', mime_type: 'text/jsonl', purpose: 'batch' }));
if (upload) {
  const sent = await Promise.all(
    Array.from({ length: parts }, (_, i) =>
      step('part', async () =>
        c.uploads.parts.create(upload.id, { data: await toFile(data.subarray(i * partBytes, (i + 1) * partBytes), `part-${i}`) }))));
  const done = await step('complete', () =>
    c.uploads.complete(upload.id, { part_ids: sent.map((p) => p?.id), md5 }));
  if (done?.file) {
    await step('download', async () => {
      const body = Buffer.from(await (await c.files.content(done.file.id)).arrayBuffer());
      return { bytes: body.length, same: body.equals(data) };
    });
  }
}

const other = await step('create', () =>
  c.uploads.create({ bytes: 10, filename: 'notes.txt', mime_type: 'text/plain', purpose: 'assistants' }));
if (other) {
  await step('cancel', () => c.uploads.cancel(other.id));
}

process.stdout.write(JSON.stringify(report) + '\n');
