// The explorer's entry point: finds a key that works (the well-known emulator key, else one
// the user enters, kept in this tab's sessionStorage at most), fills the landing panel, and
// wires the tree, the container views, the tabs and the keyboard shortcuts together.

import { Api } from './api.js';
import { confirmDialog, initDialogs } from './dialogs.js';
import { byId, setStatus, showError } from './dom.js';
import { Editor } from './editor.js';
import { ItemsView } from './items.js';
import { QueryView } from './query.js';
import { SearchView } from './search.js';
import { SettingsView } from './settings.js';
import { EMULATOR_KEY, canSign } from './signing.js';
import { Tree } from './tree.js';
import { TtlMonitor, noteServerTime } from './ttl.js';

const KEY_STORAGE = 'lethedb.explorer.key';
const TABS = ['items', 'query', 'search', 'settings'];

const app = { api: null, tree: null, open: null, tab: 'items' };

/** The account (`GET /`) signed with `key`; null when the key is refused. */
async function tryKey(key) {
  const api = await Api.withKey(key, noteServerTime);
  try {
    const answer = await api.account();
    return { api, account: answer.body };
  } catch (error) {
    if (error.status === 401 || error.status === 403) return null;
    throw error;
  }
}

function showLanding(account, key, isEmulatorKey) {
  const endpoint = account?.writableLocations?.[0]?.databaseAccountEndpoint ?? `${location.origin}/`;
  byId('endpoint').textContent = endpoint;
  byId('account').hidden = false;
  byId('key-form').hidden = true;
  if (isEmulatorKey) {
    byId('key').textContent = key;
    byId('connection-string').textContent = `AccountEndpoint=${endpoint};AccountKey=${key};`;
    byId('emulator-key').hidden = false;
  } else {
    // A custom key is the user's own: never shown back, and never in the DOM.
    byId('emulator-key')?.remove();
  }
}

function askForKey(message) {
  byId('emulator-key')?.remove();
  const form = byId('key-form');
  form.hidden = false;
  setStatus(message, 'error');
  byId('key-input').focus();
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const input = byId('key-input');
    const key = input.value.trim();
    let found = null;
    try {
      found = await tryKey(key);
    } catch (error) {
      setStatus(`That is not a usable key: ${error.message}`, 'error');
      return;
    }
    if (!found) {
      setStatus('The server refused that key (401). Check it and try again.', 'error');
      return;
    }
    input.value = '';
    sessionStorage.setItem(KEY_STORAGE, key);
    form.hidden = true;
    connected(found, key, false);
  });
}

function selectTab(tab) {
  app.tab = tab;
  for (const name of TABS) {
    byId(`tab-${name}`).setAttribute('aria-selected', String(name === tab));
    byId(`page-${name}`).hidden = name !== tab;
  }
}

function showView(view) {
  byId('landing').hidden = view !== 'landing';
  byId('database-view').hidden = view !== 'database';
  byId('container-view').hidden = view !== 'container';
}

function openDatabase(db) {
  app.open = { db, container: null };
  app.monitor.close();
  showView('database');
  byId('database-title').textContent = db;
  const containers = app.tree.databases.get(db)?.containers ?? [];
  byId('database-info').textContent = `${containers.length} containers. Select one in the tree, or create one with “New container”.`;
}

async function openContainer(db, listed) {
  let container = listed;
  try {
    container = (await app.api.readContainer(db, listed.id)).body;
  } catch (error) {
    showError(`Reading ${db}/${listed.id} failed`, error);
  }
  app.open = { db, container };
  showView('container');
  byId('container-title').textContent = `${db} / ${container.id}`;
  describeContainer(container);
  const context = { db, container };
  app.items.setContainer(context);
  app.query.setContainer({ db, container });
  app.search.setContainer({ db, container });
  app.settings.setContainer({ db, container });
  app.monitor.open(db, container.id);
  selectTab('items');
  if (window.matchMedia('(max-width: 800px)').matches) byId('side').classList.add('collapsed');
}

function describeContainer(container) {
  const ttl = container.defaultTtl === undefined || container.defaultTtl === null
    ? 'time to live off' : container.defaultTtl === -1 ? 'time to live on, no default' : `defaultTtl ${container.defaultTtl} s`;
  byId('container-info').textContent = `partition key ${(container.partitionKey?.paths ?? []).join(', ')} · ${ttl}`;
}

/** A container's definition changed (saved here, or seen changed in the TTL figures). */
function containerChanged(container) {
  if (!app.open?.container || app.open.container.id !== container.id) return;
  app.open.container = container;
  describeContainer(container);
  app.items.updateContainer(container);
  app.search.setContainer({ db: app.open.db, container });
  app.monitor.refresh();
  app.tree.reload().catch((error) => showError('Listing databases failed', error));
}

async function deleteDatabase() {
  const db = app.open?.db;
  if (!db) return;
  if (!await confirmDialog('Delete database', `Delete the database “${db}” with all its containers and items? This cannot be undone.`)) return;
  try {
    await app.api.deleteDatabase(db);
    setStatus(`Database ${db} deleted.`, 'ok');
    app.open = null;
    showView('landing');
    await app.tree.reload();
  } catch (error) {
    showError(`Deleting ${db} failed`, error);
  }
}

async function deleteContainer() {
  const open = app.open;
  if (!open?.container) return;
  const name = `${open.db}/${open.container.id}`;
  if (!await confirmDialog('Delete container', `Delete the container “${name}” with all its items? This cannot be undone.`)) return;
  try {
    await app.api.deleteContainer(open.db, open.container.id);
    setStatus(`Container ${name} deleted.`, 'ok');
    app.monitor.close();
    await app.tree.reload();
    app.tree.select(open.db, null);
    openDatabase(open.db);
  } catch (error) {
    showError(`Deleting ${name} failed`, error);
  }
}

function wire() {
  for (const name of TABS) byId(`tab-${name}`).addEventListener('click', () => selectTab(name));
  byId('delete-database').addEventListener('click', deleteDatabase);
  byId('delete-container').addEventListener('click', deleteContainer);
  document.addEventListener('keydown', (event) => {
    if (!(event.ctrlKey || event.metaKey) || byId('container-view').hidden) return;
    if (event.key === 's' && app.tab === 'items') {
      event.preventDefault();
      app.editor.save();
    } else if (event.key === 'Enter' && app.tab === 'query' && event.target !== byId('query-editor')) {
      event.preventDefault();
      app.query.run();
    }
  });
}

function connected({ api, account }, key, isEmulatorKey) {
  app.api = api;
  showLanding(account, key, isEmulatorKey);
  app.editor = new Editor(api, {
    onSaved: (document, replacedRid) => app.items.put(document, replacedRid),
    onDeleted: (rid) => app.items.remove(rid),
  });
  app.items = new ItemsView(api, app.editor);
  app.query = new QueryView(api);
  app.search = new SearchView(api);
  app.settings = new SettingsView(api, containerChanged);
  app.monitor = new TtlMonitor(api, (overview) => {
    const container = app.open?.container;
    if (container && overview.container === container.id && (overview.defaultTtl ?? null) !== (container.defaultTtl ?? null)) {
      // Someone changed the TTL elsewhere: expiries follow the server's setting.
      api.readContainer(app.open.db, container.id).then((answer) => containerChanged(answer.body)).catch(() => {});
    }
  });
  app.tree = new Tree(api, { onSelectDatabase: openDatabase, onSelectContainer: openContainer });
  byId('new-database').disabled = false;
  byId('new-container').disabled = false;
  wire();
  app.tree.reload()
    .then(() => setStatus('Connected.', 'ok'))
    .catch((error) => showError('Listing databases failed', error));
  if (!isEmulatorKey) {
    const forget = byId('key-forget');
    forget.hidden = false;
    byId('key-form').hidden = false;
    byId('key-input').closest('label').hidden = true;
    byId('key-submit').hidden = true;
    forget.addEventListener('click', () => {
      sessionStorage.removeItem(KEY_STORAGE);
      location.reload();
    });
  }
}

async function start() {
  initDialogs();
  byId('tree-toggle').addEventListener('click', () => byId('side').classList.toggle('collapsed'));
  if (!canSign()) {
    setStatus('This page signs requests with WebCrypto, which browsers offer only over HTTPS or on localhost/127.0.0.1. Open it that way.', 'error');
    return;
  }
  try {
    const saved = sessionStorage.getItem(KEY_STORAGE);
    if (saved) {
      const found = await tryKey(saved);
      if (found) {
        connected(found, saved, saved === EMULATOR_KEY);
        return;
      }
      sessionStorage.removeItem(KEY_STORAGE);
    }
    const emulator = await tryKey(EMULATOR_KEY);
    if (emulator) {
      connected(emulator, EMULATOR_KEY, true);
      return;
    }
    askForKey('This server does not use the emulator key: enter its master key.');
  } catch (error) {
    showError('The server did not answer', error);
  }
}

start();
