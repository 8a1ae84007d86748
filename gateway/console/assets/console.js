// The console's one script: what plain forms cannot do. Everything works
// without it except the copy buttons, "Select all on this page" and the
// upload's progress bar; the first two are hidden where it does not run.
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

  // A file upload goes with XMLHttpRequest, whose upload events give the
  // progress. The parts go in the order the server reads them: the form's
  // token, the file's size (so an oversized file is refused before it is
  // sent), then the file.
  const form = document.getElementById('upload');
  if (form) {
    form.addEventListener('submit', (event) => {
      const input = form.querySelector('input[type=file]');
      if (!input.files.length) {
        return; // the browser's own required-field message
      }
      event.preventDefault();
      const file = input.files[0];
      const data = new FormData();
      data.append('csrf', form.querySelector('input[name=csrf]').value);
      data.append('size', String(file.size));
      data.append('file', file, file.name);

      const box = form.querySelector('.progress');
      const bar = document.getElementById('upload-progress');
      const percent = document.getElementById('upload-percent');
      const message = document.getElementById('upload-message');
      const button = form.querySelector('button[type=submit]');
      const show = (kind, text) => {
        message.hidden = false;
        message.className = 'flash ' + kind;
        message.setAttribute('role', kind === 'error' ? 'alert' : 'status');
        message.textContent = text;
      };
      box.hidden = false;
      message.hidden = true;
      button.disabled = true;
      bar.value = 0;
      percent.textContent = '0 %';

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
          show('ok', answer.message + ' ');
          const link = document.createElement('a');
          link.href = answer.location;
          link.textContent = 'Show it in the list';
          link.id = 'upload-done';
          message.append(link);
        } else if (answer) {
          show('error', answer.message);
        } else if (xhr.status === 403 || xhr.status === 401 || xhr.responseURL.includes('/console/sign-in')) {
          show('error', 'Your session has ended or this page is out of date. Reload the page and sign in again.');
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
  }
});
