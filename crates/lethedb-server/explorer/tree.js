// The resource tree: databases and their containers, listed through the public API, with the
// dialogs that create them. Selecting a node is reported to the app, which opens its view;
// the tree itself only lists, creates and highlights.

import { formDialog } from './dialogs.js';
import { byId, h, setStatus, showError } from './dom.js';

/** A throughput field's value: empty for none, else a whole number of RU/s. */
function throughputOf(text) {
  if (!text) return { value: undefined };
  const value = Number(text);
  if (!Number.isInteger(value) || value < 400) return { error: 'Throughput must be a whole number of RU/s, at least 400 (or empty for none).' };
  return { value };
}

/** A default-TTL field's value: empty for off, -1, or a positive number of seconds. */
export function defaultTtlOf(text) {
  const trimmed = (text ?? '').trim();
  if (trimmed === '' || trimmed.toLowerCase() === 'off') return { value: null };
  const value = Number(trimmed);
  if (!Number.isInteger(value) || (value !== -1 && value < 1)) {
    return { error: 'Time to live is empty (off), -1 (on, items never expire unless they set ttl) or a positive number of seconds.' };
  }
  return { value };
}

export class Tree {
  constructor(api, { onSelectDatabase, onSelectContainer }) {
    this.api = api;
    this.onSelectDatabase = onSelectDatabase;
    this.onSelectContainer = onSelectContainer;
    /** id → {containers: [definition] | null, expanded} */
    this.databases = new Map();
    this.selected = { db: null, coll: null };
    byId('new-database').addEventListener('click', () => this.newDatabase());
    byId('new-container').addEventListener('click', () => this.newContainer());
  }

  /** Lists the databases again, and the containers of every expanded one. */
  async reload() {
    const answer = await this.api.listDatabases();
    const ids = (answer.body?.Databases ?? []).map((d) => d.id).sort();
    const next = new Map();
    for (const id of ids) next.set(id, this.databases.get(id) ?? { containers: null, expanded: false });
    this.databases = next;
    await Promise.all(ids.filter((id) => next.get(id).expanded).map((id) => this.loadContainers(id)));
    this.render();
  }

  async loadContainers(db) {
    const entry = this.databases.get(db);
    if (!entry) return;
    const answer = await this.api.listContainers(db);
    entry.containers = (answer.body?.DocumentCollections ?? []).sort((a, b) => a.id.localeCompare(b.id));
  }

  /** The definition of a container as last listed. */
  container(db, coll) {
    return this.databases.get(db)?.containers?.find((c) => c.id === coll) ?? null;
  }

  async toggle(db) {
    const entry = this.databases.get(db);
    entry.expanded = !entry.expanded || this.selected.db !== db || this.selected.coll !== null;
    try {
      if (entry.expanded) await this.loadContainers(db);
    } catch (error) {
      showError(`Listing the containers of ${db} failed`, error);
    }
    this.select(db, null);
    this.onSelectDatabase(db);
  }

  select(db, coll) {
    this.selected = { db, coll };
    byId('new-container').disabled = false;
    this.render();
  }

  render() {
    const nodes = [];
    for (const [db, entry] of this.databases) {
      const selected = this.selected.db === db && this.selected.coll === null;
      nodes.push(h('div', { className: 'node' },
        h('button', {
          type: 'button', testid: `database-${db}`, className: `node-button database${selected ? ' selected' : ''}`,
          'aria-expanded': String(entry.expanded), title: db, onclick: () => this.toggle(db),
        }, h('span', { className: 'caret', text: entry.expanded ? '▾' : '▸' }), db),
        entry.expanded ? h('div', { className: 'children' }, (entry.containers ?? []).map((container) => {
          const active = this.selected.db === db && this.selected.coll === container.id;
          const ttl = container.defaultTtl === undefined || container.defaultTtl === null ? '' : ` · ttl ${container.defaultTtl}`;
          return h('button', {
            type: 'button', testid: `container-${db}-${container.id}`, className: `node-button container${active ? ' selected' : ''}`,
            title: `${container.id}${ttl}`,
            onclick: () => { this.select(db, container.id); this.onSelectContainer(db, container); },
          }, container.id, ttl ? h('small', { className: 'muted', text: ttl }) : null);
        }), entry.containers && entry.containers.length === 0 ? h('p', { className: 'muted empty', text: 'no containers' }) : null) : null));
    }
    if (nodes.length === 0) nodes.push(h('p', { className: 'muted empty', text: 'No databases yet.' }));
    byId('tree').replaceChildren(...nodes);
  }

  newDatabase() {
    return formDialog({
      title: 'New database',
      fields: [
        { name: 'id', label: 'Database id', testid: 'database-id' },
        { name: 'throughput', label: 'Shared throughput (RU/s, optional)', testid: 'throughput', type: 'number' },
      ],
      submit: async ({ id, throughput }) => {
        if (!id) return 'The database needs an id.';
        const parsed = throughputOf(throughput);
        if (parsed.error) return parsed.error;
        try {
          await this.api.createDatabase(id, parsed.value);
        } catch (error) {
          return `${error.status ?? ''} ${error.message}`.trim();
        }
        setStatus(`Database ${id} created.`, 'ok');
        await this.reload();
        return undefined;
      },
    });
  }

  newContainer() {
    return formDialog({
      title: 'New container',
      text: 'Time to live: empty turns it off, -1 turns it on without a default, a number of seconds expires every item that long after its last write (an item’s own ttl wins).',
      fields: [
        { name: 'db', label: 'Database id (created if missing)', testid: 'database-id', value: this.selected.db ?? '' },
        { name: 'id', label: 'Container id', testid: 'container-id' },
        { name: 'partitionKey', label: 'Partition key path', testid: 'partition-key', value: '/id', placeholder: '/tenantId' },
        { name: 'defaultTtl', label: 'Default time to live', testid: 'default-ttl', placeholder: 'empty: off · -1 · seconds' },
        { name: 'throughput', label: 'Throughput (RU/s, optional)', testid: 'throughput', type: 'number' },
      ],
      submit: async ({ db, id, partitionKey, defaultTtl, throughput }) => {
        if (!db || !id) return 'The container needs a database id and an id.';
        const paths = (partitionKey || '/id').split(',').map((p) => p.trim()).filter(Boolean);
        if (paths.some((p) => !p.startsWith('/'))) return 'A partition key path starts with "/", for example /tenantId.';
        const ttl = defaultTtlOf(defaultTtl);
        if (ttl.error) return ttl.error;
        const offer = throughputOf(throughput);
        if (offer.error) return offer.error;
        const definition = {
          id,
          partitionKey: paths.length > 1 ? { paths, kind: 'MultiHash', version: 2 } : { paths, kind: 'Hash', version: 2 },
        };
        if (ttl.value !== null) definition.defaultTtl = ttl.value;
        try {
          if (!this.databases.has(db)) {
            try {
              await this.api.createDatabase(db);
            } catch (error) {
              if (error.status !== 409) throw error;
            }
          }
          await this.api.createContainer(db, definition, offer.value);
        } catch (error) {
          return `${error.status ?? ''} ${error.message}`.trim();
        }
        setStatus(`Container ${db}/${id} created.`, 'ok');
        await this.reload();
        const entry = this.databases.get(db);
        if (entry && !entry.expanded) {
          entry.expanded = true;
          await this.loadContainers(db);
        }
        const created = this.container(db, id);
        this.select(db, id);
        if (created) this.onSelectContainer(db, created);
        return undefined;
      },
    });
  }
}
