// Client-side encryption through @azure/cosmos, as docs/compatibility.md describes what the server
// keeps of it: a database's client encryption keys (created, 409 on a taken id, rewrapped, read),
// a container's clientEncryptionPolicy (returned as stored, every key it names must exist, fixed
// on replace), and items the SDK encrypts before they leave the client: the server stores only
// ciphertext, and an encryption-enabled client reads, queries and decrypts them.

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  EncryptionAlgorithm,
  EncryptionKeyResolverName,
  EncryptionQueryBuilder,
  EncryptionType,
} from "@azure/cosmos";
import { makeClient, statusOf, uniqueId, useServer, withDatabase } from "./lib/fixtures.js";

const context = useServer();

// A key resolver for tests: "wraps" a data encryption key by adding a byte, so that only a
// client with this resolver can unwrap it. It stands in for Azure Key Vault.
class ShiftingResolver {
  encryptionKeyResolverName = EncryptionKeyResolverName.AzureKeyVault;
  async wrapKey(_keyId, _algorithm, key) {
    return Buffer.from(key.map((byte) => (byte + 7) % 256));
  }
  async unwrapKey(_keyId, _algorithm, wrapped) {
    return Buffer.from(wrapped.map((byte) => (byte + 249) % 256));
  }
}

// The key wrap algorithm the SDK accepts (its KeyEncryptionAlgorithm.RSA_OAEP, not exported).
const RSA_OAEP = "RSA-OAEP";

function metadata(value) {
  return { type: EncryptionKeyResolverName.AzureKeyVault, name: "kek", value, algorithm: RSA_OAEP };
}

function encryptingClient() {
  return makeClient(context.server, {
    clientEncryptionOptions: { keyEncryptionKeyResolver: new ShiftingResolver(), encryptionKeyTimeToLiveInSeconds: 0 },
  });
}

function path(property, encryptionType = EncryptionType.DETERMINISTIC) {
  return {
    path: property,
    clientEncryptionKeyId: "key1",
    encryptionType,
    encryptionAlgorithm: EncryptionAlgorithm.AEAD_AES_256_CBC_HMAC_SHA256,
  };
}

// Runs `body(encryptedDatabase, plainDatabase)` on a fresh database holding the key `key1`.
function withKey(body) {
  return withDatabase(context.client, async (plain) => {
    const client = encryptingClient();
    try {
      const database = client.database(plain.id);
      const created = await database.createClientEncryptionKey(
        "key1", EncryptionAlgorithm.AEAD_AES_256_CBC_HMAC_SHA256, metadata("https://vault.example/keys/kek/1"));
      assert.equal(created.statusCode, 201);
      return await body(database, plain);
    } finally {
      client.dispose();
    }
  });
}

test("a key is created once, read back and rewrapped", () =>
  withKey(async (database) => {
    const again = () => database.createClientEncryptionKey(
      "key1", EncryptionAlgorithm.AEAD_AES_256_CBC_HMAC_SHA256, metadata("https://vault.example/keys/kek/2"));
    assert.equal(await statusOf(again), 409);
    const read = await database.readClientEncryptionKey("key1");
    assert.equal(read.clientEncryptionKeyProperties.encryptionKeyWrapMetadata.value, "https://vault.example/keys/kek/1");
    const rewrapped = await database.rewrapClientEncryptionKey("key1", metadata("https://vault.example/keys/kek/3"));
    assert.equal(rewrapped.statusCode, 200);
    const after = await database.readClientEncryptionKey("key1");
    assert.equal(after.clientEncryptionKeyProperties.encryptionKeyWrapMetadata.value, "https://vault.example/keys/kek/3");
    assert.equal(await statusOf(() => database.readClientEncryptionKey("missing")), 404);
  }));

test("items are stored encrypted, and read and queried through the policy", () =>
  withKey(async (database, plain) => {
    const policy = { includedPaths: [path("/pk"), path("/secret", EncryptionType.RANDOMIZED)], policyFormatVersion: 2 };
    const id = uniqueId("enc");
    const { container, resource } = await database.containers.create({ id, partitionKey: { paths: ["/pk"] }, clientEncryptionPolicy: policy });
    assert.deepEqual(resource.clientEncryptionPolicy, policy);
    await container.items.create({ id: "a", pk: "p1", secret: "hush", open: 1 });

    // The server holds ciphertext: a client without the keys sees neither value.
    const { resources: stored } = await plain.container(id).items.readAll().fetchAll();
    assert.equal(stored.length, 1);
    assert.notEqual(stored[0].pk, "p1");
    assert.notEqual(stored[0].secret, "hush");
    assert.equal(stored[0].open, 1);

    const { resource: read } = await container.item("a", "p1").read();
    assert.equal(read.secret, "hush");
    const query = new EncryptionQueryBuilder("SELECT * FROM c WHERE c.pk = @pk");
    query.addParameter("@pk", "p1", "/pk");
    const { resources } = await (await container.items.getEncryptionQueryIterator(query)).fetchAll();
    assert.deepEqual(resources.map((item) => [item.id, item.secret]), [["a", "hush"]]);
  }));

test("a policy must name existing keys and cannot change on replace", () =>
  withKey(async (_database, plain) => {
    const unknown = { includedPaths: [{ ...path("/secret"), clientEncryptionKeyId: "nokey" }], policyFormatVersion: 1 };
    const refused = await plain.containers.create({ id: uniqueId("bad"), partitionKey: { paths: ["/pk"] }, clientEncryptionPolicy: unknown })
      .then(() => undefined, (error) => error);
    assert.equal(refused?.code, 400);
    assert.match(refused.message, /ClientEncryptionKey with id '\[nokey\]' does not exist/);

    const policy = { includedPaths: [path("/secret")], policyFormatVersion: 1 };
    const { container } = await plain.containers.create({ id: uniqueId("fixed"), partitionKey: { paths: ["/pk"] }, clientEncryptionPolicy: policy });
    const { resource: definition } = await container.read();
    assert.equal((await container.replace({ ...definition, defaultTtl: 60 })).statusCode, 200);
    const changed = { ...definition, clientEncryptionPolicy: { ...policy, includedPaths: [path("/other")] } };
    assert.equal(await statusOf(() => container.replace(changed)), 400);
  }));
