// The search tab: a vector search (a pasted vector against a path of the container's vector
// embedding policy, closest first, with each result's score) or a full-text search (terms
// against a path of its full-text policy, every term contained). The tab writes the query it
// runs into view, so what it does can be copied into an application.

import { QueryCursor } from './api.js';
import { byId, h, busy } from './dom.js';

/** Results a search shows at most. */
const TOP_MAX = 100;

/** A path of a policy (`/a/b`) as a property reference on `c`. */
function reference(path) {
  const segments = path.split('/').filter(Boolean);
  return `c${segments.map((segment) => `[${JSON.stringify(segment)}]`).join('')}`;
}

/** The searches a container's policies allow: its vector embeddings and full-text paths. */
function targets(container) {
  const vectors = (container.vectorEmbeddingPolicy?.vectorEmbeddings ?? []).map((embedding) => ({
    kind: 'vector',
    path: embedding.path,
    distance: embedding.distanceFunction,
    label: `Vector ${embedding.path} (${embedding.distanceFunction}, ${embedding.dimensions} dimensions)`,
  }));
  const texts = (container.fullTextPolicy?.fullTextPaths ?? []).map((entry) => ({
    kind: 'text',
    path: entry.path,
    label: `Full text ${entry.path}`,
  }));
  return [...vectors, ...texts];
}

/** The query of a search, with its parameters. */
export function searchQuery(target, input, top) {
  const path = reference(target.path);
  if (target.kind === 'vector') {
    const options = JSON.stringify({ distanceFunction: target.distance });
    const score = `VectorDistance(${path}, @vector, false, ${options})`;
    return {
      text: `SELECT TOP ${top} c.id, ${score} AS score FROM c ORDER BY ${score}`,
      parameters: [{ name: '@vector', value: JSON.parse(input) }],
    };
  }
  const terms = input.split(/\s+/).filter(Boolean);
  const names = terms.map((_, index) => `@term${index}`);
  return {
    text: `SELECT TOP ${top} c.id FROM c WHERE FullTextContainsAll(${path}, ${names.join(', ')})`,
    parameters: terms.map((term, index) => ({ name: names[index], value: term })),
  };
}

export class SearchView {
  constructor(api) {
    this.api = api;
    this.context = null;
    byId('run-search').addEventListener('click', () => this.run());
  }

  setContainer(context) {
    this.context = context;
    const select = byId('search-target');
    select.textContent = '';
    this.targets = targets(context.container);
    this.targets.forEach((target, index) => select.append(h('option', { value: String(index), text: target.label })));
    byId('search-none').hidden = this.targets.length > 0;
    byId('run-search').disabled = this.targets.length === 0;
    byId('search-results').textContent = '';
    byId('search-query').textContent = '';
    byId('search-error').hidden = true;
  }

  async run() {
    const target = this.targets?.[Number(byId('search-target').value)];
    if (!this.context || !target) return;
    const error = byId('search-error');
    await busy(byId('run-search'), async () => {
      try {
        const top = Math.min(Math.max(Number(byId('search-top').value) || 10, 1), TOP_MAX);
        const query = searchQuery(target, byId('search-input').value, top);
        byId('search-query').textContent = query.text;
        const rows = await this.everyRange(query, top);
        error.hidden = true;
        show(rows, target, top);
      } catch (failure) {
        error.textContent = `${failure.status ?? ''} ${failure.code ?? ''}: ${failure.message}`.trim();
        error.hidden = false;
        byId('search-results').textContent = '';
      }
    });
  }

  /** The best `top` rows over every range: each range answers its own best, merged here. */
  async everyRange(query, top) {
    const { db, container } = this.context;
    const cursor = new QueryCursor(this.api, db, container.id, query.text, query.parameters, top);
    const rows = [];
    while (!cursor.done) rows.push(...(await cursor.next()).items);
    return rows;
  }
}

/** The best `top` results, closest first for a vector search (by its distance function's
 * direction). */
function show(rows, target, top) {
  const list = byId('search-results');
  list.textContent = '';
  if (target.kind === 'vector') {
    const larger = target.distance !== 'euclidean';
    rows.sort((a, b) => (larger ? b.score - a.score : a.score - b.score));
  }
  for (const row of rows.slice(0, top)) {
    const score = typeof row.score === 'number' ? row.score.toFixed(6) : '';
    list.append(h('li', { testid: 'search-result', 'data-id': row.id, 'data-score': score },
      h('span', { className: 'score', text: score }), ' ', h('span', { text: row.id })));
  }
  if (rows.length === 0) list.append(h('li', { className: 'muted', text: 'Nothing found.' }));
}
