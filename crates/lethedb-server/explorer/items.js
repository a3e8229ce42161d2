// The items view: pages of 50 through `x-ms-continuation` ("Load more"), never the whole
// container; a WHERE filter; each item's expiry and a live countdown against the server's
// clock, rows leaving the view at their expiry instant; "extend" and "make permanent"
// (ordinary replaces with If-Match); and uploading a JSON file of items with a progress bar.

import { QueryCursor, partitionKeyText } from './api.js';
import { byId, h, setStatus, showError, formatDuration, formatInstant } from './dom.js';
import { expiryOf, serverNow } from './ttl.js';

/** Items per page of the list. */
const PAGE_ITEMS = 50;
/** How many uploads are in flight at once. */
const UPLOAD_CONCURRENCY = 4;
/** How often countdowns are redrawn. */
const TICK_MS = 200;
/** Rows turn amber this long before they expire. */
const SOON_MS = 10_000;

export class ItemsView {
  constructor(api, editor) {
    this.api = api;
    this.editor = editor;
    this.context = null;
    /** rid → {document, row, expiry} */
    this.rows = new Map();
    this.cursor = null;
    this.generation = 0;
    byId('apply-filter').addEventListener('click', () => this.reload());
    byId('filter').addEventListener('keydown', (event) => {
      if (event.key === 'Enter') this.reload();
    });
    byId('load-more').addEventListener('click', () => this.loadMore());
    byId('new-item').addEventListener('click', () => this.editor.newItem());
    byId('upload').addEventListener('change', (event) => this.upload(event.target));
    setInterval(() => this.tick(), TICK_MS);
  }

  /** Opens a container ({db, container}); the list starts over. */
  setContainer(context) {
    this.context = context;
    byId('filter').value = '';
    this.editor.setContainer(context);
    this.reload();
  }

  /** The container's definition changed (its TTL): expiries are recomputed. */
  updateContainer(container) {
    if (!this.context) return;
    this.context.container = container;
    // Rows are drawn anew: whether an item has a countdown and actions depends on the setting.
    for (const entry of [...this.rows.values()]) this.put(entry.document);
    this.tick();
  }

  queryText() {
    const filter = byId('filter').value.trim().replace(/^where\s+/i, '');
    return filter ? `SELECT * FROM c WHERE ${filter}` : 'SELECT * FROM c';
  }

  async reload() {
    if (!this.context) return;
    this.generation += 1;
    this.rows.clear();
    byId('items').replaceChildren();
    const { db, container } = this.context;
    this.cursor = new QueryCursor(this.api, db, container.id, this.queryText(), [], PAGE_ITEMS);
    await this.loadMore();
  }

  async loadMore() {
    const cursor = this.cursor;
    const generation = this.generation;
    if (!cursor || cursor.done) return;
    const button = byId('load-more');
    button.disabled = true;
    try {
      let page;
      // A range that holds nothing more answers an empty page: move on to the next one.
      do {
        page = await cursor.next();
      } while (page.items.length === 0 && !cursor.done && generation === this.generation);
      if (generation !== this.generation) return;
      for (const document of page.items) this.put(document);
      setStatus(`Loaded ${this.rows.size} items of ${this.context.db}/${this.context.container.id} (${page.charge.toFixed(2)} RU, ${Math.round(page.ms)} ms for the last page).`, 'ok');
    } catch (error) {
      if (generation === this.generation) showError('Reading items failed', error);
    } finally {
      if (generation === this.generation) {
        button.hidden = cursor.done;
        button.disabled = false;
        this.tick();
      }
    }
  }

  /** Adds or refreshes the row of one item (`replacedRid`: the version it replaces). */
  put(document, replacedRid) {
    const old = this.rows.get(replacedRid ?? document._rid) ?? this.rows.get(document._rid);
    const expiry = expiryOf(document, this.context.container);
    if (expiry && expiry.atMs <= serverNow()) {
      if (old) this.remove(old.document._rid);
      return;
    }
    const row = this.renderRow(document, expiry);
    if (old) {
      old.row.replaceWith(row);
      this.rows.delete(old.document._rid);
    } else {
      byId('items').append(row);
    }
    this.rows.set(document._rid, { document, row, expiry });
    if (this.editor.openRid() === document._rid) row.classList.add('selected');
  }

  remove(rid) {
    const entry = this.rows.get(rid);
    if (!entry) return;
    entry.row.remove();
    this.rows.delete(rid);
  }

  renderRow(document, expiry) {
    const id = String(document.id);
    const countdown = expiry ? h('span', { testid: `countdown-${id}`, className: 'countdown', title: '' }) : h('span', { className: 'muted', text: 'never' });
    const actions = expiry ? [
      h('button', { type: 'button', testid: `extend-${id}`, title: 'Write the item again: its time to live starts over', text: 'Extend', onclick: (event) => { event.stopPropagation(); this.rewrite(document._rid, false); } }),
      h('button', { type: 'button', testid: `permanent-${id}`, title: 'Set ttl to -1: the item never expires', text: 'Permanent', onclick: (event) => { event.stopPropagation(); this.rewrite(document._rid, true); } }),
    ] : [];
    const row = h('tr', { testid: `item-${id}`, tabindex: '0', onclick: () => this.select(document._rid), onkeydown: (event) => { if (event.key === 'Enter') this.select(document._rid); } },
      h('td', { className: 'id', text: id, title: id }),
      h('td', { className: 'pk', text: partitionKeyText(this.context.container, document) }),
      h('td', { className: 'expires' }, countdown),
      h('td', { className: 'actions' }, actions));
    if (expiry) {
      countdown.title = `Expires ${formatInstant(expiry.atMs)} under ${expiry.rule}. _ts is whole seconds, so the server's instant may be up to 999 ms later.`;
    }
    return row;
  }

  select(rid) {
    const entry = this.rows.get(rid);
    if (!entry) return;
    for (const other of this.rows.values()) other.row.classList.toggle('selected', other === entry);
    this.editor.open(entry.document);
    this.tick();
  }

  /** Extend (write again, which restarts the countdown) or make permanent (`ttl: -1`). */
  async rewrite(rid, permanent) {
    const entry = this.rows.get(rid);
    if (!entry || !this.context) return;
    const { db, container } = this.context;
    const document = { ...entry.document };
    for (const name of ['_rid', '_self', '_etag', '_attachments', '_ts']) delete document[name];
    if (permanent) document.ttl = -1;
    try {
      const answer = await this.api.replaceItem(db, container, entry.document.id, document, entry.document._etag);
      this.put(answer.body, rid);
      if (this.editor.openRid() === rid) this.editor.open(answer.body);
      setStatus(permanent ? `${answer.body.id} is now permanent (ttl -1).` : `${answer.body.id} extended: its time to live starts over.`, 'ok');
    } catch (error) {
      if (error.status === 412) setStatus(`Conflict (412): ${entry.document.id} changed on the server; reload it before extending.`, 'error');
      else if (error.status === 404) {
        this.remove(rid);
        setStatus(`${entry.document.id} no longer exists (deleted, or expired).`, 'error');
      } else showError('Rewriting the item failed', error);
    }
  }

  /** Redraws countdowns and drops rows whose expiry instant has passed. */
  tick() {
    if (!this.context) return;
    const now = serverNow();
    for (const [rid, entry] of this.rows) {
      if (!entry.expiry) continue;
      const left = entry.expiry.atMs - now;
      if (left <= 0) {
        this.remove(rid);
        if (this.editor.openRid() === rid) {
          this.editor.clear();
          setStatus(`${entry.document.id} expired and is gone.`, '');
        }
        continue;
      }
      const countdown = entry.row.querySelector('.countdown');
      countdown.textContent = formatDuration(left);
      countdown.dataset.leftMs = String(Math.round(left));
      entry.row.classList.toggle('soon', left < SOON_MS);
    }
    const openRid = this.editor.openRid();
    const open = openRid ? this.rows.get(openRid) : null;
    byId('editor-expiry').textContent = open ? (open.expiry
      ? `Expires ${new Date(open.expiry.atMs).toISOString()} (in ${formatDuration(open.expiry.atMs - now)}) under ${open.expiry.rule}.`
      : 'Never expires.') : '';
    byId('items-count').textContent = `${this.rows.size} items shown${this.cursor && !this.cursor.done ? ', more on the server' : ''}.`;
  }

  async upload(input) {
    const file = input.files?.[0];
    if (!file || !this.context) return;
    const { db, container } = this.context;
    let documents;
    try {
      documents = JSON.parse(await file.text());
    } catch (error) {
      setStatus(`${file.name} is not valid JSON: ${error.message}`, 'error');
      input.value = '';
      return;
    }
    if (!Array.isArray(documents)) documents = [documents];
    const progress = byId('upload-progress');
    progress.max = Math.max(1, documents.length);
    progress.value = 0;
    progress.hidden = false;
    let created = 0;
    let failed = 0;
    let firstError = '';
    let next = 0;
    const worker = async () => {
      while (next < documents.length) {
        const document = documents[next];
        next += 1;
        try {
          if (document === null || typeof document !== 'object' || Array.isArray(document)) throw new Error('not a JSON object');
          if (document.id === undefined) document.id = crypto.randomUUID();
          await this.api.createItem(db, container, document);
          created += 1;
        } catch (error) {
          failed += 1;
          if (!firstError) firstError = `${error.status ?? ''} ${error.message}`.trim();
        }
        progress.value = created + failed;
        progress.dataset.done = String(created + failed);
        setStatus(`Uploading ${file.name}: ${created + failed} of ${documents.length}…`);
      }
    };
    await Promise.all(Array.from({ length: UPLOAD_CONCURRENCY }, worker));
    progress.dataset.created = String(created);
    progress.dataset.failed = String(failed);
    input.value = '';
    await this.reload();
    setStatus(`Uploaded ${file.name}: ${created} created, ${failed} failed${firstError ? ` (first error: ${firstError})` : ''}.`, failed ? 'error' : 'ok');
  }
}
