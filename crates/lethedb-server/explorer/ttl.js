// Time to live made visible: the server's clock as the browser estimates it, each item's
// expiry instant under its container's setting, and the container panel fed by the server's
// TTL overview every 2 s (the "expiring soon" histogram and the sweeper chart).
//
// Countdowns run against the server's clock, not the browser's: the overview carries the
// server's time in milliseconds, and the sample with the shortest round trip gives the offset.
// Until one arrives, the HTTP Date header (whole seconds) gives a coarse one.

import { byId, formatDuration } from './dom.js';

const SVG = 'http://www.w3.org/2000/svg';
/** How often the container panel asks the server for its TTL figures. */
export const POLL_MS = 2000;
/** How many polls the sweeper chart shows (5 minutes). */
const HISTORY_MAX = 150;
/** How many exact clock samples are kept; the one with the shortest round trip wins. */
const CLOCK_SAMPLES_MAX = 10;

const clock = { offsetMs: 0, exact: false, coarse: false, uncertaintyMs: Infinity, samples: [] };

/** Server time now, as estimated in the browser. */
export function serverNow() {
  return Date.now() + clock.offsetMs;
}

/** Notes a server time read during a request sent at `sentMs` and answered at `receivedMs`. */
export function noteServerTime(serverMs, sentMs, receivedMs, exact) {
  if (!Number.isFinite(serverMs)) return;
  const roundTripMs = Math.max(0, receivedMs - sentMs);
  const midpointMs = sentMs + roundTripMs / 2;
  if (exact) {
    clock.samples.push({ offsetMs: serverMs - midpointMs, roundTripMs });
    if (clock.samples.length > CLOCK_SAMPLES_MAX) clock.samples.shift();
    const best = clock.samples.reduce((a, b) => (b.roundTripMs < a.roundTripMs ? b : a));
    clock.offsetMs = best.offsetMs;
    clock.uncertaintyMs = best.roundTripMs / 2;
    clock.exact = true;
  } else if (!clock.exact) {
    // A Date header is whole seconds, truncated: the true time is within the next second.
    clock.offsetMs = serverMs + 500 - midpointMs;
    clock.uncertaintyMs = 500 + roundTripMs / 2;
    clock.coarse = true;
  } else {
    return;
  }
  renderSkew();
}

function renderSkew() {
  const element = byId('clock-skew');
  const skew = -clock.offsetMs;
  const direction = skew >= 0 ? 'ahead of' : 'behind';
  const amount = Math.abs(skew) < 1000 ? `${Math.round(Math.abs(skew))} ms` : formatDuration(Math.abs(skew));
  element.textContent = `browser clock ${amount} ${direction} server (±${Math.ceil(clock.uncertaintyMs)} ms${clock.exact ? '' : ', from Date header'})`;
  element.dataset.skewMs = String(Math.round(skew));
}

/**
 * When an item expires under its container's setting: {atMs, rule} or null when it never
 * does. The server expires an item at its last write in milliseconds plus its ttl; `_ts` is
 * that write in whole seconds, so the instant shown may be up to 999 ms before the server's.
 */
export function expiryOf(item, container) {
  const defaultTtl = container?.defaultTtl;
  if (defaultTtl === undefined || defaultTtl === null || !Number.isFinite(item?._ts)) return null;
  const own = item.ttl;
  const ownValid = Number.isInteger(own) && (own === -1 || own >= 1);
  if (ownValid && own === -1) return null;
  if (ownValid) return { atMs: (item._ts + own) * 1000, rule: `its own ttl (${own} s)` };
  if (defaultTtl === -1) return null;
  return { atMs: (item._ts + defaultTtl) * 1000, rule: `the container's defaultTtl (${defaultTtl} s)` };
}

function svg(tag, attributes = {}, text) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

const number = (n) => Number(n ?? 0).toLocaleString('en-US');

function renderHistogram(overview) {
  const bars = [
    ['expired, unswept', overview.expiredUnswept, 'expired'],
    ['next minute', overview.expiring.nextMinute, 'soon'],
    ['next hour', overview.expiring.nextHour, ''],
    ['next day', overview.expiring.nextDay, ''],
  ];
  const width = 260;
  const rowHeight = 22;
  const labelWidth = 110;
  const max = Math.max(1, ...bars.map(([, value]) => value));
  const chart = svg('svg', { viewBox: `0 0 ${width} ${bars.length * rowHeight}`, role: 'img', class: 'histogram' });
  chart.append(svg('title', {}, 'Items expiring within each window (cumulative) and expired items the sweeper has not deleted yet'));
  bars.forEach(([label, value, kind], row) => {
    const y = row * rowHeight;
    const barWidth = Math.round(((width - labelWidth - 50) * value) / max);
    chart.append(
      svg('text', { x: 0, y: y + 15, class: 'label' }, label),
      svg('rect', { x: labelWidth, y: y + 4, width: Math.max(barWidth, value > 0 ? 2 : 0), height: rowHeight - 8, class: `bar ${kind}` }),
      svg('text', { x: labelWidth + barWidth + 4, y: y + 15, class: 'value', 'data-window': label }, number(value)),
    );
  });
  const element = byId('histogram');
  element.replaceChildren(chart);
  element.dataset.nextMinute = String(overview.expiring.nextMinute);
  element.dataset.nextHour = String(overview.expiring.nextHour);
  element.dataset.nextDay = String(overview.expiring.nextDay);
  element.dataset.expiredUnswept = String(overview.expiredUnswept);
}

function polyline(points, scale, height, kind) {
  return svg('polyline', {
    class: `line ${kind}`,
    points: points.map(([x, value]) => `${x.toFixed(1)},${(height - 4 - (value / scale) * (height - 12)).toFixed(1)}`).join(' '),
  });
}

function renderSweeper(history) {
  const width = 260;
  const height = 90;
  const chart = svg('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', class: 'sweeper' });
  chart.append(svg('title', {}, 'Sweeper backlog (expired, not yet deleted) and deletions per second over the last minutes'));
  chart.append(svg('line', { x1: 0, y1: height - 4, x2: width, y2: height - 4, class: 'axis' }));
  const last = history[history.length - 1];
  if (history.length > 0) {
    const step = width / Math.max(1, HISTORY_MAX - 1);
    const start = width - step * (history.length - 1);
    const backlogMax = Math.max(1, ...history.map((h) => h.backlog));
    const rateMax = Math.max(1, ...history.map((h) => h.rate));
    chart.append(
      polyline(history.map((h, i) => [start + i * step, h.backlog]), backlogMax, height, 'backlog'),
      polyline(history.map((h, i) => [start + i * step, h.rate]), rateMax, height, 'rate'),
      svg('text', { x: 2, y: 11, class: 'legend backlog' }, `backlog ${number(last.backlog)} (max ${number(backlogMax)})`),
      svg('text', { x: width - 2, y: 11, class: 'legend rate', 'text-anchor': 'end' }, `${number(last.rate)} deletions/s`),
    );
  }
  const element = byId('sweeper-chart');
  element.replaceChildren(chart);
  if (last) {
    element.dataset.backlog = String(last.backlog);
    element.dataset.deletionsPerSec = String(last.rate);
    element.dataset.samples = String(history.length);
    const oldest = last.oldestAgeMs > 0 ? `oldest expired ${formatDuration(last.oldestAgeMs)} ago` : 'nothing awaits the sweeper';
    byId('sweeper-text').textContent = `${number(last.backlog)} expired items await deletion · ${oldest} · ${number(last.deletedTotal)} deleted since start${last.complete ? '' : ' · counts capped (at least)'}`;
  }
}

/** Polls one container's TTL figures every POLL_MS while it is open, and draws them. */
export class TtlMonitor {
  constructor(api, onOverview) {
    this.api = api;
    this.onOverview = onOverview;
    this.target = null;
    this.timer = null;
    this.history = [];
  }

  open(db, coll) {
    this.close();
    this.target = { db, coll };
    this.history = [];
    byId('histogram').replaceChildren();
    byId('sweeper-chart').replaceChildren();
    byId('sweeper-text').textContent = 'Reading the server’s TTL figures…';
    this.poll();
  }

  close() {
    this.target = null;
    clearTimeout(this.timer);
    this.timer = null;
  }

  /** Polls now (after a change the user made), then keeps the cadence. */
  refresh() {
    if (!this.target) return;
    clearTimeout(this.timer);
    this.poll();
  }

  async poll() {
    const target = this.target;
    if (!target) return;
    try {
      const overview = await this.api.ttlOverview(target.db, target.coll);
      if (this.target !== target) return;
      this.history.push({
        backlog: overview.expiredUnswept,
        rate: overview.sweeper.deletionsPerSec,
        oldestAgeMs: overview.oldestExpiredAgeMs,
        deletedTotal: overview.sweeper.deletedTotal,
        complete: overview.complete,
      });
      if (this.history.length > HISTORY_MAX) this.history.shift();
      renderHistogram(overview);
      renderSweeper(this.history);
      this.onOverview(overview);
    } catch (error) {
      if (this.target !== target) return;
      byId('sweeper-text').textContent = `TTL figures unavailable: ${error.message}`;
    }
    if (this.target === target) this.timer = setTimeout(() => this.poll(), POLL_MS);
  }
}
