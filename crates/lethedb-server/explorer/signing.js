// Master-key signatures, computed in the browser with WebCrypto, exactly as the Cosmos SDKs
// compute them: HMAC-SHA256, keyed by the base64-decoded master key, over
// "verb\nresourceType\nresourceLink\ndate\n\n" with verb, type and date lower-cased and the
// link as it is (ids not encoded). The key never leaves this module's CryptoKey.

/** The well-known key of the Cosmos DB emulator: public, printed in Microsoft's docs. */
export const EMULATOR_KEY =
  'C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==';

function base64ToBytes(text) {
  const binary = atob(text.trim());
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function bytesToBase64(buffer) {
  let binary = '';
  for (const byte of new Uint8Array(buffer)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** Whether this page can sign at all: WebCrypto exists only in secure contexts. */
export function canSign() {
  return Boolean(globalThis.crypto && crypto.subtle);
}

/** A signer for one master key; throws if the text is not base64. */
export async function makeSigner(keyText) {
  const key = await crypto.subtle.importKey(
    'raw', base64ToBytes(keyText), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return {
    /** The `authorization` header value of one request. */
    async authorization(verb, resourceType, resourceLink, date) {
      const text = `${verb.toLowerCase()}\n${resourceType.toLowerCase()}\n${resourceLink}\n${date.toLowerCase()}\n\n`;
      const signature = await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(text));
      return encodeURIComponent(`type=master&ver=1.0&sig=${bytesToBase64(signature)}`);
    },
  };
}
