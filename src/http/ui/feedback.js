// Feedback that is not about one server's panel: a passing toast, and a
// yes/no question in a modal dialog.
import { $ } from './dom.js';

let toastTimer;
/** Shows `text` for a few seconds in the page's toast. */
export function toast(text) {
  const el = $('#toast');
  el.textContent = text;
  el.classList.add('shown');
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => el.classList.remove('shown'), 4000);
}

/** Asks a yes/no question in the confirm dialog; resolves true for its OK button. */
export function confirmDialog(title, text, okText) {
  const dialog = $('#confirm-dialog');
  $('#confirm-title').textContent = title;
  $('#confirm-text').textContent = text;
  $('#confirm-ok').textContent = okText;
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) => dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok'), { once: true }));
}
