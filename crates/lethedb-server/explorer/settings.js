// The settings tab of a container: time to live (off, -1, or seconds) with a preview of what
// a change would expire at once (asked from the server before saving), the indexing policy as
// JSON, and the throughput (the container's offer, replaced through the public API).

import { defaultTtlOf } from './tree.js';
import { byId, setStatus, showError, busy } from './dom.js';

/** How long the TTL field must rest before a preview is asked for. */
const PREVIEW_DELAY_MS = 300;
const SYSTEM_PROPERTIES = ['_rid', '_self', '_etag', '_ts', '_docs', '_sprocs', '_triggers', '_udfs', '_conflicts'];

function ttlText(value) {
  return value === undefined || value === null ? '' : String(value);
}

export class SettingsView {
  /** `onSaved(definition)` hears the container's new definition. */
  constructor(api, onSaved) {
    this.api = api;
    this.onSaved = onSaved;
    this.context = null;
    this.offer = null;
    this.previewTimer = null;
    this.previewSerial = 0;
    byId('settings-form').addEventListener('submit', (event) => {
      event.preventDefault();
      this.save();
    });
    byId('settings-ttl').addEventListener('input', () => {
      clearTimeout(this.previewTimer);
      this.previewTimer = setTimeout(() => this.preview(), PREVIEW_DELAY_MS);
    });
  }

  async setContainer(context) {
    this.context = context;
    this.offer = null;
    const { container } = context;
    byId('settings-ttl').value = ttlText(container.defaultTtl);
    byId('ttl-preview').textContent = '';
    byId('settings-indexing').value = JSON.stringify(container.indexingPolicy ?? {}, null, 2);
    byId('settings-pk').textContent = `Partition key: ${(container.partitionKey?.paths ?? []).join(', ')} (cannot be changed).`;
    byId('settings-throughput').value = '';
    byId('throughput-info').textContent = 'Reading the offer…';
    try {
      const offers = await this.api.listOffers();
      if (this.context !== context) return;
      this.offer = (offers.body?.Offers ?? []).find((offer) => offer.offerResourceId === container._rid) ?? null;
      const throughput = this.offer?.content?.offerThroughput;
      byId('settings-throughput').value = throughput ?? '';
      byId('throughput-info').textContent = this.offer
        ? `Provisioned: ${throughput} RU/s.`
        : 'No throughput of its own (shared with the database, or unlimited).';
      byId('settings-throughput').disabled = !this.offer;
    } catch (error) {
      byId('throughput-info').textContent = `Offer unavailable: ${error.message}`;
    }
  }

  /** Asks the server what the TTL in the field would expire at once, and shows it. */
  async preview() {
    if (!this.context) return;
    const element = byId('ttl-preview');
    const parsed = defaultTtlOf(byId('settings-ttl').value);
    if (parsed.error) {
      element.textContent = parsed.error;
      element.dataset.expireAtOnce = '';
      return;
    }
    const current = this.context.container.defaultTtl ?? null;
    const serial = ++this.previewSerial;
    try {
      const overview = await this.api.ttlOverview(this.context.db, this.context.container.id, parsed.value === null ? 'off' : parsed.value);
      if (serial !== this.previewSerial) return;
      const { expireAtOnce, expiring } = overview.preview;
      element.dataset.expireAtOnce = String(expireAtOnce);
      const change = parsed.value === current ? 'This is the current setting. ' : '';
      const atOnce = expireAtOnce === 1 ? '1 item' : `${expireAtOnce.toLocaleString('en-US')} items`;
      element.textContent = `${change}Saving it expires ${atOnce} at once (invisible immediately; the sweeper deletes them later). `
        + `Then ${expiring.nextMinute} expire within a minute, ${expiring.nextHour} within an hour, ${expiring.nextDay} within a day.`
        + (overview.complete ? '' : ' (Counts are capped: at least these.)');
      element.classList.toggle('warning', expireAtOnce > 0);
    } catch (error) {
      if (serial === this.previewSerial) element.textContent = `Preview unavailable: ${error.message}`;
    }
  }

  async save() {
    if (!this.context) return;
    const { db, container } = this.context;
    const ttl = defaultTtlOf(byId('settings-ttl').value);
    if (ttl.error) {
      setStatus(ttl.error, 'error');
      return;
    }
    let indexingPolicy;
    try {
      indexingPolicy = JSON.parse(byId('settings-indexing').value || '{}');
    } catch (error) {
      setStatus(`The indexing policy is not valid JSON: ${error.message}`, 'error');
      return;
    }
    const definition = { ...container, indexingPolicy };
    for (const name of SYSTEM_PROPERTIES) delete definition[name];
    if (ttl.value === null) delete definition.defaultTtl;
    else definition.defaultTtl = ttl.value;
    await busy(byId('save-settings'), async () => {
      try {
        const answer = await this.api.replaceContainer(db, container.id, definition);
        this.context.container = answer.body;
        const throughput = byId('settings-throughput').value;
        if (this.offer && throughput && Number(throughput) !== this.offer.content?.offerThroughput) {
          const offer = { ...this.offer, content: { ...this.offer.content, offerThroughput: Number(throughput) } };
          const replaced = await this.api.replaceOffer(offer);
          this.offer = replaced.body;
          byId('throughput-info').textContent = `Provisioned: ${this.offer.content.offerThroughput} RU/s.`;
        }
        byId('ttl-preview').textContent = '';
        setStatus(`Settings of ${db}/${container.id} saved.`, 'ok');
        this.onSaved(answer.body);
      } catch (error) {
        showError('Saving the settings failed', error);
      }
    });
  }
}
