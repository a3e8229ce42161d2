// The item editor: one item as JSON in a textarea. Save replaces it with If-Match on the ETag
// it was opened with, so a change made meanwhile by anyone else is a visible conflict (412),
// never a silent overwrite; New item creates; Delete deletes with the same condition.

import { byId, h, setStatus, showError, busy } from './dom.js';

/** System properties the server sets; they are shown but not sent back. */
const SYSTEM_PROPERTIES = ['_rid', '_self', '_etag', '_attachments', '_ts'];

function withoutSystemProperties(document) {
  const copy = { ...document };
  for (const name of SYSTEM_PROPERTIES) delete copy[name];
  return copy;
}

export class Editor {
  /** `onSaved(document, replacedRid)` and `onDeleted(rid)` keep the list in step. */
  constructor(api, { onSaved, onDeleted }) {
    this.api = api;
    this.onSaved = onSaved;
    this.onDeleted = onDeleted;
    this.context = null;
    this.original = null;
    byId('save').addEventListener('click', () => this.save());
    byId('delete-item').addEventListener('click', () => this.remove());
    this.clear();
  }

  /** The container whose items are edited: {db, container}. */
  setContainer(context) {
    this.context = context;
    this.clear();
  }

  clear() {
    this.original = null;
    this.isNew = false;
    byId('editor').value = '';
    byId('editor').disabled = true;
    byId('editor-title').textContent = 'No item selected';
    byId('save').disabled = true;
    byId('delete-item').disabled = true;
    byId('editor-expiry').textContent = '';
    this.hideConflict();
  }

  open(document) {
    this.original = document;
    this.isNew = false;
    const editor = byId('editor');
    editor.disabled = false;
    editor.value = JSON.stringify(document, null, 2);
    byId('editor-title').textContent = `Item ${document.id}`;
    byId('save').disabled = false;
    byId('delete-item').disabled = false;
    this.hideConflict();
  }

  newItem() {
    if (!this.context) return;
    const template = { id: crypto.randomUUID() };
    for (const path of this.context.container.partitionKey?.paths ?? []) {
      const name = path.split('/').filter(Boolean)[0];
      if (name && name !== 'id') template[name] = '';
    }
    this.original = null;
    this.isNew = true;
    const editor = byId('editor');
    editor.disabled = false;
    editor.value = JSON.stringify(template, null, 2);
    byId('editor-title').textContent = 'New item (not saved yet)';
    byId('save').disabled = false;
    byId('delete-item').disabled = true;
    byId('editor-expiry').textContent = '';
    this.hideConflict();
    editor.focus();
  }

  /** The rid of the item open in the editor, if it was saved. */
  openRid() {
    return this.original?._rid ?? null;
  }

  hideConflict() {
    const conflict = byId('conflict');
    conflict.hidden = true;
    conflict.replaceChildren();
  }

  showConflict(what) {
    const conflict = byId('conflict');
    conflict.replaceChildren(
      h('strong', { text: 'Conflict: ' }),
      `this item was changed or deleted on the server after you opened it (its ETag no longer matches), so your ${what} was not applied. Your text is still in the editor. `,
      h('button', { type: 'button', text: 'Load the server’s version', onclick: () => this.reload() }),
    );
    conflict.hidden = false;
    setStatus(`Conflict (412): the item changed on the server; nothing was overwritten.`, 'error');
  }

  async reload() {
    if (!this.original || !this.context) return;
    try {
      const answer = await this.api.readItem(this.context.db, this.context.container, this.original.id, this.original);
      this.open(answer.body);
      this.onSaved(answer.body, this.original._rid);
      setStatus(`Loaded the server’s version of ${answer.body.id}.`, 'ok');
    } catch (error) {
      if (error.status === 404) {
        this.onDeleted(this.original._rid);
        this.clear();
        setStatus('The item no longer exists (deleted, or expired).', 'error');
      } else {
        showError('Reading the item failed', error);
      }
    }
  }

  async save() {
    if (!this.context || byId('save').disabled) return;
    let document;
    try {
      document = JSON.parse(byId('editor').value);
    } catch (error) {
      setStatus(`The item is not valid JSON: ${error.message}`, 'error');
      return;
    }
    if (document === null || typeof document !== 'object' || Array.isArray(document)) {
      setStatus('An item is a JSON object.', 'error');
      return;
    }
    const { db, container } = this.context;
    await busy(byId('save'), async () => {
      try {
        let answer;
        if (this.isNew) {
          answer = await this.api.createItem(db, container, withoutSystemProperties(document));
        } else {
          answer = await this.api.replaceItem(db, container, this.original.id, withoutSystemProperties(document), this.original._etag);
        }
        const replaced = this.isNew ? null : this.original._rid;
        this.open(answer.body);
        this.onSaved(answer.body, replaced);
        setStatus(`Saved ${answer.body.id} (${answer.charge.toFixed(2)} RU).`, 'ok');
      } catch (error) {
        if (error.status === 412) this.showConflict('save');
        else showError('Saving the item failed', error);
      }
    });
  }

  async remove() {
    if (!this.context || !this.original) return;
    const { db, container } = this.context;
    const doomed = this.original;
    const deleted = await busy(byId('delete-item'), async () => {
      try {
        await this.api.deleteItem(db, container, doomed.id, doomed, doomed._etag);
        return true;
      } catch (error) {
        if (error.status === 412) this.showConflict('delete');
        else showError('Deleting the item failed', error);
        return false;
      }
    });
    if (deleted) {
      this.onDeleted(doomed._rid);
      if (this.original === doomed) this.clear();
      setStatus(`Deleted ${doomed.id}.`, 'ok');
    }
  }
}
