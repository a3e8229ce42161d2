// The Cosmos REST calls the explorer makes, signed in the page (signing.js), with
// x-ms-version 2018-12-31 like the SDKs. Every response's status, body, request charge and
// elapsed time are kept; a failure throws an ApiError carrying the server's message.

import { makeSigner } from './signing.js';

const VERSION = '2018-12-31';
/** How often a throttled request (429) is retried, as the SDKs do, before it fails. */
const THROTTLE_RETRIES_MAX = 9;
/** The longest wait between two tries, whatever the server's retry-after says. */
const THROTTLE_WAIT_MAX_MS = 5000;

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

/** A failed request: HTTP status, Cosmos code and the server's message. */
export class ApiError extends Error {
  constructor(status, code, message, headers) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

/** The path of a resource, each id percent-encoded. */
export function pathOf(...parts) {
  return '/' + parts.map((part, i) => (i % 2 ? encodeURIComponent(part) : part)).join('/');
}

/** The value of a partition key path (`/a/b`) in a document; undefined if absent. */
function valueAt(document, path) {
  let value = document;
  for (const segment of path.split('/').filter(Boolean)) {
    const name = segment.replace(/^"|"$/g, '');
    if (value === null || typeof value !== 'object' || !(name in value)) return undefined;
    value = value[name];
  }
  return value;
}

/** The `x-ms-documentdb-partitionkey` header for a document under a container definition. */
export function partitionKeyHeader(container, document) {
  const paths = container?.partitionKey?.paths ?? [];
  const values = paths.map((path) => {
    const value = valueAt(document, path);
    return value === undefined ? {} : value;
  });
  return JSON.stringify(values);
}

/** The partition key value(s) of a document, for display. */
export function partitionKeyText(container, document) {
  const paths = container?.partitionKey?.paths ?? [];
  return paths.map((path) => {
    const value = valueAt(document, path);
    return value === undefined ? '(none)' : JSON.stringify(value);
  }).join(', ');
}

export class Api {
  /** `onClock(serverMs, sentMs, receivedMs, exact)` hears the server time of each answer. */
  constructor(signer, onClock) {
    this.signer = signer;
    this.onClock = onClock ?? (() => {});
  }

  static async withKey(keyText, onClock) {
    return new Api(await makeSigner(keyText), onClock);
  }

  /**
   * One signed request, retried while throttled (429). `signed` is [resourceType,
   * resourceLink]; `path` is the URL path. Returns {status, body, headers, charge, ms}.
   */
  async request(verb, path, signed, options = {}) {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await this.once(verb, path, signed, options);
      } catch (error) {
        if (error.status !== 429 || attempt >= THROTTLE_RETRIES_MAX) throw error;
        const waitMs = Number(error.headers?.get('x-ms-retry-after-ms') ?? 100);
        await sleep(Math.min(THROTTLE_WAIT_MAX_MS, Math.max(10, waitMs)));
      }
    }
  }

  async once(verb, path, signed, { body, headers = {}, raw = false } = {}) {
    const date = new Date().toUTCString();
    const all = {
      'x-ms-date': date,
      'x-ms-version': VERSION,
      authorization: await this.signer.authorization(verb, signed[0], signed[1], date),
      accept: 'application/json',
      ...headers,
    };
    if (body !== undefined && !all['content-type']) all['content-type'] = 'application/json';
    const sent = Date.now();
    const started = performance.now();
    const response = await fetch(path, {
      method: verb,
      headers: all,
      body: body === undefined ? undefined : (raw ? body : JSON.stringify(body)),
      cache: 'no-store',
      credentials: 'omit',
    });
    const text = await response.text();
    const ms = performance.now() - started;
    const received = Date.now();
    const serverDate = Date.parse(response.headers.get('date') ?? '');
    if (!Number.isNaN(serverDate)) this.onClock(serverDate, sent, received, false);
    let parsed = null;
    if (text) {
      try { parsed = JSON.parse(text); } catch { parsed = text; }
    }
    const charge = Number(response.headers.get('x-ms-request-charge') ?? 0);
    if (!response.ok && response.status !== 304) {
      const message = parsed && typeof parsed === 'object' ? parsed.message : String(parsed ?? '');
      throw new ApiError(response.status, parsed?.code, message, response.headers);
    }
    return { status: response.status, body: parsed, headers: response.headers, charge, ms, sent, received };
  }

  account() { return this.request('GET', '/', ['', '']); }

  listDatabases() { return this.request('GET', '/dbs', ['dbs', '']); }

  createDatabase(id, throughput) {
    const headers = throughput ? { 'x-ms-offer-throughput': String(throughput) } : {};
    return this.request('POST', '/dbs', ['dbs', ''], { body: { id }, headers });
  }

  deleteDatabase(db) {
    return this.request('DELETE', pathOf('dbs', db), ['dbs', `dbs/${db}`]);
  }

  listContainers(db) {
    return this.request('GET', pathOf('dbs', db, 'colls'), ['colls', `dbs/${db}`]);
  }

  createContainer(db, definition, throughput) {
    const headers = throughput ? { 'x-ms-offer-throughput': String(throughput) } : {};
    return this.request('POST', pathOf('dbs', db, 'colls'), ['colls', `dbs/${db}`], { body: definition, headers });
  }

  readContainer(db, coll) {
    return this.request('GET', pathOf('dbs', db, 'colls', coll), ['colls', `dbs/${db}/colls/${coll}`]);
  }

  replaceContainer(db, coll, definition) {
    return this.request('PUT', pathOf('dbs', db, 'colls', coll), ['colls', `dbs/${db}/colls/${coll}`], { body: definition });
  }

  deleteContainer(db, coll) {
    return this.request('DELETE', pathOf('dbs', db, 'colls', coll), ['colls', `dbs/${db}/colls/${coll}`]);
  }

  partitionKeyRanges(db, coll) {
    return this.request('GET', pathOf('dbs', db, 'colls', coll, 'pkranges'), ['pkranges', `dbs/${db}/colls/${coll}`]);
  }

  /** One page of a query on one partition key range (or the whole container without one). */
  query(db, coll, text, parameters, { continuation, rangeId, pageItems = 50 } = {}) {
    const headers = {
      'content-type': 'application/query+json',
      'x-ms-documentdb-isquery': 'True',
      'x-ms-documentdb-query-enablecrosspartition': 'True',
      'x-ms-max-item-count': String(pageItems),
      'x-ms-documentdb-populatequerymetrics': 'True',
      'x-ms-cosmos-populateindexmetrics': 'True',
    };
    if (rangeId !== undefined) headers['x-ms-documentdb-partitionkeyrangeid'] = rangeId;
    if (continuation) headers['x-ms-continuation'] = continuation;
    return this.request('POST', pathOf('dbs', db, 'colls', coll, 'docs'), ['docs', `dbs/${db}/colls/${coll}`],
      { body: { query: text, parameters }, headers });
  }

  createItem(db, container, document) {
    return this.request('POST', pathOf('dbs', db, 'colls', container.id, 'docs'), ['docs', `dbs/${db}/colls/${container.id}`],
      { body: document, headers: { 'x-ms-documentdb-partitionkey': partitionKeyHeader(container, document) } });
  }

  /** A replace that succeeds only while the item still has `etag` (412 otherwise). */
  replaceItem(db, container, id, document, etag) {
    const link = `dbs/${db}/colls/${container.id}/docs/${id}`;
    return this.request('PUT', pathOf('dbs', db, 'colls', container.id, 'docs', id), ['docs', link], {
      body: document,
      headers: { 'x-ms-documentdb-partitionkey': partitionKeyHeader(container, document), 'if-match': etag },
    });
  }

  readItem(db, container, id, document) {
    const link = `dbs/${db}/colls/${container.id}/docs/${id}`;
    return this.request('GET', pathOf('dbs', db, 'colls', container.id, 'docs', id), ['docs', link], {
      headers: { 'x-ms-documentdb-partitionkey': partitionKeyHeader(container, document) },
    });
  }

  deleteItem(db, container, id, document, etag) {
    const link = `dbs/${db}/colls/${container.id}/docs/${id}`;
    const headers = { 'x-ms-documentdb-partitionkey': partitionKeyHeader(container, document) };
    if (etag) headers['if-match'] = etag;
    return this.request('DELETE', pathOf('dbs', db, 'colls', container.id, 'docs', id), ['docs', link], { headers });
  }

  listOffers() { return this.request('GET', '/offers', ['offers', '']); }

  replaceOffer(offer) {
    return this.request('PUT', pathOf('offers', offer.id), ['offers', offer.id.toLowerCase()], { body: offer });
  }

  /**
   * The server's TTL figures for a container (`GET /_lethedb/ttl/dbs/{db}/colls/{coll}`,
   * signed as a read of the container). `preview`: a proposed defaultTtl ('off', -1, n).
   */
  async ttlOverview(db, coll, preview) {
    let path = `/_lethedb/ttl${pathOf('dbs', db, 'colls', coll)}`;
    if (preview !== undefined) path += `?previewDefaultTtl=${encodeURIComponent(preview)}`;
    const answer = await this.request('GET', path, ['colls', `dbs/${db}/colls/${coll}`]);
    this.onClock(answer.body.nowMs, answer.sent, answer.received, true);
    return answer.body;
  }
}

/**
 * Pages of one query over every partition key range in turn (one range: the query runs whole,
 * ORDER BY and aggregates included). `next()` returns {items, charge, ms, done}.
 */
export class QueryCursor {
  constructor(api, db, coll, text, parameters, pageItems) {
    Object.assign(this, { api, db, coll, text, parameters, pageItems });
    this.ranges = null;
    this.rangeIndex = 0;
    this.continuation = undefined;
    this.done = false;
  }

  async next() {
    if (this.ranges === null) {
      const answer = await this.api.partitionKeyRanges(this.db, this.coll);
      this.ranges = (answer.body?.PartitionKeyRanges ?? []).map((range) => range.id);
      if (this.ranges.length === 0) this.ranges = [undefined];
    }
    const answer = await this.api.query(this.db, this.coll, this.text, this.parameters, {
      continuation: this.continuation,
      rangeId: this.ranges[this.rangeIndex],
      pageItems: this.pageItems,
    });
    this.continuation = answer.headers.get('x-ms-continuation') || undefined;
    if (!this.continuation) {
      this.rangeIndex += 1;
      this.done = this.rangeIndex >= this.ranges.length;
    }
    return {
      items: answer.body?.Documents ?? [],
      charge: answer.charge,
      ms: answer.ms,
      done: this.done,
      metrics: queryMetrics(answer.headers.get('x-ms-documentdb-query-metrics')),
      indexes: indexUtilization(answer.headers.get('x-ms-cosmos-index-utilization')),
    };
  }
}

/** The `name=value;` pairs of `x-ms-documentdb-query-metrics`, as numbers. */
export function queryMetrics(header) {
  const metrics = {};
  for (const pair of (header ?? '').split(';')) {
    const [name, value] = pair.split('=');
    if (name && value !== undefined) metrics[name.trim()] = Number(value);
  }
  return metrics;
}

/** The service's index utilization report (base64 JSON in `x-ms-cosmos-index-utilization`). */
export function indexUtilization(header) {
  if (!header) return null;
  try {
    return JSON.parse(atob(header));
  } catch {
    return null;
  }
}
