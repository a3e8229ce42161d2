// The one modal dialog, used two ways: a form of named text fields (create a database or a
// container; its submit button is data-testid "create") and a confirmation (its button is
// "confirm"). The native <dialog> gives focus handling and Escape to cancel. A form stays open
// with the server's message when its submission fails, so the user can correct a field.

import { byId, h } from './dom.js';

/** The open dialog: {resolve, fields, submit}. */
let current = null;

function close(result) {
  const dialog = byId('dialog');
  if (dialog.open) dialog.close();
  const open = current;
  current = null;
  if (open) open.resolve(result);
}

function open({ title, text, fields = [], submitLabel, submitTestid, danger, submit }) {
  close(false);
  byId('dialog-title').textContent = title;
  byId('dialog-text').textContent = text ?? '';
  byId('dialog-error').hidden = true;
  const container = byId('dialog-fields');
  container.replaceChildren(...fields.map((field) => h('label', { className: 'field' },
    h('span', { text: field.label }),
    h('input', {
      id: `field-${field.name}`, testid: field.testid, type: field.type ?? 'text', value: field.value ?? '',
      placeholder: field.placeholder, spellcheck: 'false', autocomplete: 'off',
    }),
    field.help ? h('small', { className: 'muted', text: field.help }) : null)));
  const button = byId('dialog-submit');
  button.textContent = submitLabel;
  button.dataset.testid = submitTestid;
  button.className = danger ? 'danger' : 'primary';
  button.disabled = false;
  byId('dialog').showModal();
  const first = container.querySelector('input');
  (first ?? button).focus();
  return new Promise((resolve) => { current = { resolve, fields, submit }; });
}

async function onSubmit(event) {
  event.preventDefault();
  const open = current;
  if (!open) return;
  if (!open.submit) {
    close(true);
    return;
  }
  const values = {};
  for (const field of open.fields) values[field.name] = byId(`field-${field.name}`).value.trim();
  const button = byId('dialog-submit');
  button.disabled = true;
  let failure;
  try {
    failure = await open.submit(values);
  } catch (error) {
    failure = error?.message ?? String(error);
  }
  button.disabled = false;
  if (current !== open) return;
  if (failure) {
    const error = byId('dialog-error');
    error.textContent = failure;
    error.hidden = false;
  } else {
    close(true);
  }
}

/**
 * A form dialog. `submit(values)` runs on "create": it returns an error message to keep the
 * dialog open, or nothing to close it. Resolves true once a submission succeeded.
 */
export function formDialog({ title, text, fields, submitLabel = 'Create', submit }) {
  return open({ title, text, fields, submitLabel, submitTestid: 'create', submit });
}

/** A confirmation; resolves true when the user confirms. */
export function confirmDialog(title, text, confirmLabel = 'Delete') {
  return open({ title, text, submitLabel: confirmLabel, submitTestid: 'confirm', danger: true });
}

/** Wires the dialog's buttons once. */
export function initDialogs() {
  byId('dialog-form').addEventListener('submit', onSubmit);
  byId('dialog-cancel').addEventListener('click', () => close(false));
  byId('dialog').addEventListener('cancel', (event) => {
    event.preventDefault();
    close(false);
  });
}
