// Throughput: autoscale keeps its auto-upgrade policy, and invalid values get the service's
// message.

import { test } from "node:test";
import assert from "node:assert/strict";
import { useServer, withDatabase } from "./lib/fixtures.js";

const context = useServer();

test("autoscale keeps its autoUpgradePolicy", async () => {
  await withDatabase(context.client, async (database) => {
    const autoUpgradePolicy = { throughputPolicy: { incrementPercent: 15 } };
    const { container } = await database.containers.create({
      id: "auto",
      partitionKey: "/pk",
      maxThroughput: 4000,
      autoUpgradePolicy,
    });
    const { resource: offer } = await container.readOffer();
    assert.equal(offer.content.offerAutopilotSettings.maxThroughput, 4000);
    assert.deepEqual(offer.content.offerAutopilotSettings.autoUpgradePolicy, autoUpgradePolicy);
  });
});

test("invalid manual and autoscale throughput get the service's message", async () => {
  await withDatabase(context.client, async (database) => {
    const cases = [
      [{ throughput: 450 }, "between 400 and 1000000 inclusive in increments of 100."],
      [{ maxThroughput: 1500 }, "between 1000 and 1000000 inclusive in increments of 1000."],
    ];
    for (const [options, message] of cases) {
      await assert.rejects(
        database.containers.create({ id: "bad", partitionKey: "/pk", ...options }),
        (error) => {
          assert.equal(error.code, 400);
          assert.ok(error.message.includes(`The offer should have valid throughput values ${message}`), error.message);
          return true;
        },
      );
    }
  });
});
