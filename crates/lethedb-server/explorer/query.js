// The query tab: a query with named parameters, run with the button or Ctrl+Enter, results a
// page at a time ("Next page" follows the continuation), and for each page the request charge,
// the item count and the elapsed time. A failure shows the server's own message.

import { QueryCursor } from './api.js';
import { byId, h, busy } from './dom.js';

/** Items per page of query results. */
const PAGE_ITEMS = 100;

/** A parameter's value: JSON if it parses (numbers, booleans, arrays...), else the text. */
function parameterValue(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export class QueryView {
  constructor(api) {
    this.api = api;
    this.context = null;
    this.cursor = null;
    this.page = 0;
    byId('run-query').addEventListener('click', () => this.run());
    byId('next-page').addEventListener('click', () => this.next());
    byId('add-param').addEventListener('click', () => this.addParameter('', ''));
    byId('query-editor').addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        this.run();
      }
    });
  }

  setContainer(context) {
    this.context = context;
    this.cursor = null;
    byId('query-results').textContent = '';
    byId('query-stats').textContent = '';
    byId('query-error').hidden = true;
    byId('next-page').disabled = true;
  }

  addParameter(name, value) {
    const index = byId('query-params').children.length;
    const row = h('div', { className: 'param' },
      h('input', { type: 'text', className: 'param-name', testid: `param-name-${index}`, placeholder: '@name', value: name, spellcheck: 'false', 'aria-label': 'Parameter name' }),
      h('input', { type: 'text', className: 'param-value', testid: `param-value-${index}`, placeholder: 'value (JSON or text)', value, spellcheck: 'false', 'aria-label': 'Parameter value' }),
      h('button', { type: 'button', text: 'Remove', onclick: () => row.remove() }));
    byId('query-params').append(row);
    row.querySelector('input').focus();
  }

  parameters() {
    return [...byId('query-params').querySelectorAll('.param')].map((row) => {
      let name = row.querySelector('.param-name').value.trim();
      if (name && !name.startsWith('@')) name = `@${name}`;
      return { name, value: parameterValue(row.querySelector('.param-value').value) };
    }).filter((p) => p.name.length > 1);
  }

  async run() {
    if (!this.context) return;
    const text = byId('query-editor').value.trim();
    if (!text) return;
    const { db, container } = this.context;
    this.cursor = new QueryCursor(this.api, db, container.id, text, this.parameters(), PAGE_ITEMS);
    this.page = 0;
    await this.next();
  }

  async next() {
    const cursor = this.cursor;
    if (!cursor || cursor.done) return;
    const error = byId('query-error');
    await busy(byId('run-query'), async () => {
      try {
        let page;
        let charge = 0;
        let ms = 0;
        const plan = { loaded: 0, indexMs: 0, used: new Set(), missing: new Set() };
        do {
          page = await cursor.next();
          charge += page.charge;
          ms += page.ms;
          notePlan(plan, page);
        } while (page.items.length === 0 && !cursor.done);
        if (cursor !== this.cursor) return;
        this.page += 1;
        error.hidden = true;
        byId('query-results').textContent = JSON.stringify(page.items, null, 2);
        const stats = byId('query-stats');
        stats.textContent = `Page ${this.page} · ${charge.toFixed(2)} RU · ${page.items.length} items · ${Math.round(ms)} ms${cursor.done ? ' · last page' : ''}`;
        Object.assign(stats.dataset, { charge: String(charge), count: String(page.items.length), ms: String(Math.round(ms)), page: String(this.page) });
        showPlan(plan, page.items.length);
      } catch (failure) {
        if (cursor !== this.cursor) return;
        this.cursor = null;
        error.textContent = `${failure.status ?? ''} ${failure.code ?? ''}: ${failure.message}`.trim();
        error.hidden = false;
        byId('query-results').textContent = '';
        byId('query-stats').textContent = '';
        byId('query-plan').textContent = '';
      }
    });
    byId('next-page').disabled = !this.cursor || this.cursor.done;
  }
}

/** Adds one page's query metrics and index report to the totals of what the user sees. */
function notePlan(plan, page) {
  plan.loaded += page.metrics.retrievedDocumentCount ?? 0;
  plan.indexMs += page.metrics.indexLookupTimeInMs ?? 0;
  const report = page.indexes ?? {};
  for (const entry of report.UtilizedSingleIndexes ?? []) plan.used.add(entry.IndexSpec);
  for (const entry of report.UtilizedCompositeIndexes ?? []) plan.used.add((entry.IndexSpecs ?? []).join(', '));
  for (const entry of report.PotentialSingleIndexes ?? []) plan.missing.add(entry.IndexSpec);
  for (const entry of report.PotentialCompositeIndexes ?? []) plan.missing.add((entry.IndexSpecs ?? []).join(', '));
}

/** One line under the stats: the indexes used, what was loaded against what was returned, and
 * the indexes the policy lacks for this query. */
function showPlan(plan, returned) {
  const line = byId('query-plan');
  const used = plan.used.size ? `Index ${[...plan.used].join(' · ')}` : 'No index used';
  const parts = [used, `${plan.loaded} documents loaded for ${returned} returned`];
  if (plan.used.size) parts.push(`index lookup ${plan.indexMs.toFixed(2)} ms`);
  if (plan.missing.size) parts.push(`not indexed: ${[...plan.missing].join(' · ')}`);
  line.textContent = parts.join(' · ');
  Object.assign(line.dataset, { loaded: String(plan.loaded), indexes: [...plan.used].join('|') });
}
