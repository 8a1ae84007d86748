// The console's one script: what plain forms cannot do. Everything works
// without it except the copy buttons, "Select all on this page", the
// upload's progress bar and files over the single-upload limit, which only
// it sends in parts; the first two are hidden where it does not run.
'use strict';

document.addEventListener('DOMContentLoaded', () => {
  // Copy buttons copy the text of the element their data-copy names, and
  // say so in their .copy-label (else their whole text), until another
  // one is used. Where the clipboard is refused the text is selected and
  // the button says data-copy-fallback.
  const copyButtons = [...document.querySelectorAll('button[data-copy]')];
  const copyLabel = (button) => button.querySelector('.copy-label') || button;
  const copyLabels = new Map(copyButtons.map((b) => [b, copyLabel(b).textContent]));
  for (const button of copyButtons) {
    button.hidden = false;
    button.addEventListener('click', async () => {
      for (const [other, label] of copyLabels) {
        if (other !== button) {
          copyLabel(other).textContent = label;
        }
      }
      const source = document.getElementById(button.dataset.copy);
      try {
        await navigator.clipboard.writeText(source.textContent.trim());
        copyLabel(button).textContent = 'Copied';
      } catch {
        // Clipboard refused (no permission, insecure origin): select the
        // text so that the person can copy it themselves.
        const range = document.createRange();
        range.selectNodeContents(source);
        const sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
        copyLabel(button).textContent = button.dataset.copyFallback || 'Select and copy the key above';
      }
    });
  }

  // "Select all on this page" ticks every file box of the bulk delete's
  // form, and follows them: ticked when all are, mixed when some are.
  const selectAll = document.getElementById('select-all');
  if (selectAll) {
    const boxes = [...document.querySelectorAll('input[type=checkbox][form=bulk]')];
    const count = document.getElementById('selected-count');
    const update = () => {
      const n = boxes.filter((b) => b.checked).length;
      selectAll.checked = n > 0 && n === boxes.length;
      selectAll.indeterminate = n > 0 && n < boxes.length;
      count.textContent = n === 1 ? '1 selected' : n + ' selected';
    };
    selectAll.addEventListener('change', () => {
      for (const box of boxes) {
        box.checked = selectAll.checked;
      }
      update();
    });
    for (const box of boxes) {
      box.addEventListener('change', update);
    }
    selectAll.parentElement.hidden = false;
    count.hidden = false;
    // A page shown again from history keeps the boxes ticked before.
    update();
  }

  // A file up to the API's single-upload limit (data-single-max) goes
  // with XMLHttpRequest, whose upload events give the progress. The parts
  // go in the order the server reads them: the form's token, the file's
  // size (so an oversized file is refused before it is sent), then the
  // file. A larger file goes in parts (see sendInParts).
  const form = document.getElementById('upload');
  if (form) {
    const input = form.querySelector('input[type=file]');
    const box = form.querySelector('.progress');
    const bar = document.getElementById('upload-progress');
    const percent = document.getElementById('upload-percent');
    const message = document.getElementById('upload-message');
    const button = form.querySelector('button[type=submit]');
    const cancel = document.getElementById('upload-cancel');
    const token = form.querySelector('input[name=csrf]').value;
    const show = (kind, text) => {
      message.hidden = false;
      message.className = 'flash ' + kind;
      message.setAttribute('role', kind === 'error' ? 'alert' : 'status');
      message.textContent = text;
    };
    const done = (answer) => {
      show('ok', answer.message + ' ');
      const link = document.createElement('a');
      link.href = answer.location;
      link.textContent = 'Show it in the list';
      link.id = 'upload-done';
      message.append(link);
    };
    const sessionEnded = 'Your session has ended or this page is out of date. Reload the page and sign in again.';

    form.addEventListener('submit', (event) => {
      if (!input.files.length) {
        return; // the browser's own required-field message
      }
      event.preventDefault();
      const file = input.files[0];
      box.hidden = false;
      message.hidden = true;
      button.disabled = true;
      bar.max = 100;
      bar.value = 0;
      percent.textContent = '0 %';
      if (file.size > Number(form.dataset.singleMax)) {
        sendInParts(file).finally(() => {
          button.disabled = false;
          input.disabled = false;
        });
        return;
      }
      const data = new FormData();
      data.append('csrf', token);
      data.append('size', String(file.size));
      data.append('file', file, file.name);

      const xhr = new XMLHttpRequest();
      xhr.open('POST', form.action);
      xhr.setRequestHeader('Accept', 'application/json');
      xhr.upload.addEventListener('progress', (e) => {
        if (e.lengthComputable) {
          const p = Math.floor((100 * e.loaded) / e.total);
          bar.value = p;
          percent.textContent = p + ' %';
        }
      });
      xhr.addEventListener('load', () => {
        button.disabled = false;
        let answer = null;
        try {
          answer = JSON.parse(xhr.responseText);
        } catch {
          // not the console's answer (a proxy's error page)
        }
        if (answer && answer.ok) {
          bar.value = 100;
          percent.textContent = '100 %';
          done(answer);
        } else if (xhr.status === 413) {
          // The gateway's limit is below the one this page was given (a
          // replica with a newer configuration): parts still go.
          button.disabled = true;
          input.disabled = true;
          sendInParts(file).finally(() => {
            button.disabled = false;
            input.disabled = false;
          });
        } else if (answer) {
          show('error', answer.message);
        } else if (xhr.status === 403 || xhr.status === 401 || xhr.responseURL.includes('/console/sign-in')) {
          show('error', sessionEnded);
        } else {
          show('error', 'The upload failed (HTTP ' + xhr.status + '). Try again.');
        }
      });
      xhr.addEventListener('error', () => {
        button.disabled = false;
        show('error', 'The connection broke during the upload. Check the network and try again.');
      });
      xhr.send(data);
    });

    // A larger file goes in parts through the API's resumable uploads:
    // the upload is made (its bytes reserved), File.slice()s of
    // data-part-bytes are sent a few at once, each sent again after a
    // short wait when the connection drops or the gateway is briefly
    // unable (5xx, 429), and the upload is completed with the parts' ids
    // in the file's order. The bar counts only the parts the gateway
    // accepted, so a part sent again is never counted twice. Whatever
    // ends it early (Cancel, a refusal, leaving the page) cancels the
    // upload on the gateway, which gives the space back at once.
    const parallel = 3;
    const attempts = 4;
    const retryable = (status) => status === 408 || status === 429 || status >= 500;
    const numbers = new Intl.NumberFormat('en');
    const wait = (ms, signal) => new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      }, {once: true});
    });
    const address = (path, extra) => {
      const url = new URL(path, window.location.href);
      if (form.dataset.workspace) {
        url.searchParams.set('workspace', form.dataset.workspace);
      }
      for (const [name, value] of Object.entries(extra || {})) {
        url.searchParams.set(name, String(value));
      }
      return url;
    };
    // call posts to a route of the console's uploads and reads its JSON:
    // {ok, status, answer, message}; a dropped connection throws.
    const call = async (path, body, signal, extra) => {
      const headers = {'Accept': 'application/json', 'X-CSRF-Token': token};
      if (typeof body === 'string') {
        headers['Content-Type'] = 'application/json';
      } else if (body) {
        headers['Content-Type'] = 'application/octet-stream';
      }
      const res = await fetch(address(path, extra), {method: 'POST', body, headers, signal, credentials: 'same-origin'});
      let answer = null;
      try {
        answer = await res.json();
      } catch {
        // not the console's answer: the sign-in page, a proxy's error page
      }
      let text = '';
      if (answer && answer.error) {
        text = answer.error.message;
      } else if (res.redirected || res.status === 401 || res.status === 403) {
        text = sessionEnded;
      } else if (!res.ok || !answer) {
        text = 'The gateway answered HTTP ' + res.status + '.';
      }
      const retryAfter = Number(res.headers.get('Retry-After')) || 0;
      return {ok: res.ok && !!answer && !answer.error, status: res.status, answer, message: text, retryAfter};
    };

    let current = null; // the upload under way: {id, stop}
    const cancelOnGateway = (id) => call('/console/uploads/' + encodeURIComponent(id) + '/cancel', null).catch(() => {
      // It expires on its own within the hour if this cannot reach the gateway.
    });
    window.addEventListener('pagehide', () => {
      if (current && current.id) {
        const data = new FormData();
        data.append('csrf', token);
        navigator.sendBeacon(address('/console/uploads/' + encodeURIComponent(current.id) + '/cancel'), data);
      }
    });

    const sendInParts = async (file) => {
      const partBytes = Number(form.dataset.partBytes);
      const count = Math.ceil(file.size / partBytes);
      const stop = new AbortController();
      const upload = {id: '', stop, cancelled: false};
      current = upload;
      let sent = 0;
      const progress = () => {
        bar.max = file.size;
        bar.value = sent;
        percent.textContent = numbers.format(sent) + ' / ' + numbers.format(file.size) + ' bytes (' + Math.floor((100 * sent) / file.size) + ' %)';
      };
      progress();
      input.disabled = true;
      cancel.hidden = false;
      cancel.disabled = false;
      const onCancel = () => {
        upload.cancelled = true;
        cancel.disabled = true;
        stop.abort();
      };
      cancel.addEventListener('click', onCancel);
      let failure = '';
      const fail = (text) => {
        if (!failure) {
          failure = text;
        }
        stop.abort();
      };
      try {
        const made = await call('/console/uploads', JSON.stringify({bytes: file.size, filename: file.name, mime_type: file.type}), stop.signal);
        if (!made.ok) {
          fail(made.message);
          return;
        }
        upload.id = made.answer.id;
        const base = '/console/uploads/' + encodeURIComponent(upload.id);
        const ids = new Array(count);
        const sendPart = async (i) => {
          const start = i * partBytes;
          const end = Math.min(start + partBytes, file.size);
          for (let attempt = 1; ; attempt++) {
            let why = '';
            let pause = 500 * 2 ** (attempt - 1);
            try {
              const r = await call(base + '/parts', file.slice(start, end), stop.signal, {part: i + 1, attempt});
              if (r.ok) {
                ids[i] = r.answer.id;
                sent += end - start;
                progress();
                return;
              }
              if (!retryable(r.status)) {
                fail('Part ' + (i + 1) + ' of ' + count + ' was refused: ' + r.message);
                return;
              }
              why = r.message;
              pause = Math.max(pause, Math.min(r.retryAfter, 10) * 1000);
            } catch {
              if (stop.signal.aborted) {
                return;
              }
              why = 'the connection broke.';
            }
            if (attempt >= attempts) {
              fail('Part ' + (i + 1) + ' of ' + count + ' could not be sent in ' + attempts + ' tries (' + why.replace(/\.$/, '') + '). Check the network and try again.');
              return;
            }
            await wait(pause, stop.signal);
            if (stop.signal.aborted) {
              return;
            }
          }
        };
        let next = 0;
        const worker = async () => {
          while (next < count && !stop.signal.aborted) {
            await sendPart(next++);
          }
        };
        await Promise.all(Array.from({length: Math.min(parallel, count)}, worker));
        if (stop.signal.aborted) {
          return;
        }
        cancel.disabled = true;
        const finished = await call(base + '/complete', JSON.stringify({part_ids: ids}), stop.signal);
        if (!finished.ok) {
          fail(finished.message);
          return;
        }
        upload.id = ''; // completed: nothing to cancel
        done(finished.answer);
      } catch {
        if (!stop.signal.aborted) {
          fail('The connection broke during the upload. Check the network and try again.');
        }
      } finally {
        cancel.removeEventListener('click', onCancel);
        cancel.hidden = true;
        current = null;
        if (upload.id) {
          await cancelOnGateway(upload.id);
        }
        if (upload.cancelled && !failure) {
          show('ok', 'Upload cancelled: nothing of “' + file.name + '” was kept.');
        } else if (failure) {
          show('error', failure);
        }
      }
    };
  }
});
