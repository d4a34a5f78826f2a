/**
 * The Slack format against Block Kit's documented limits (Slack's Block Kit reference: at most 50
 * blocks; header text plain_text, 150 characters; section text 1 to 3000 characters; at most 10
 * section fields of at most 2000 characters; button text plain_text, 75 characters; button url at
 * most 3000 characters; action_id at most 255; at most 10 context elements). The checker below is
 * written from that reference, not from the builder's constants, and is itself shown to catch
 * each violation.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { NOTIFICATION_EVENTS, type Json } from "../../src/core/types.js";
import type { NotificationEvent } from "../../src/host/notify-events.js";
import { slackMessage } from "../../src/host/notify-slack.js";

type O = { [k: string]: Json };

/** Every Block Kit limit the message breaks, as readable problems (empty: it fits). */
function blockKitProblems(msg: unknown): string[] {
  const out: string[] = [];
  const m = msg as { text?: unknown; blocks?: unknown };
  if (typeof m.text !== "string" || m.text.length === 0) out.push("text: a fallback text is required");
  if (!Array.isArray(m.blocks)) return [...out, "blocks: not a list"];
  if (m.blocks.length > 50) out.push(`blocks: ${m.blocks.length} > 50`);
  const textObj = (t: unknown, where: string, max: number, plainOnly = false): void => {
    const o = t as { type?: unknown; text?: unknown };
    if (typeof o !== "object" || o === null) return void out.push(`${where}: not a text object`);
    if (o.type !== "plain_text" && (plainOnly || o.type !== "mrkdwn")) out.push(`${where}: type ${String(o.type)}`);
    if (typeof o.text !== "string" || o.text.length < 1 || o.text.length > max) out.push(`${where}: length ${typeof o.text === "string" ? o.text.length : "?"} not in 1..${max}`);
  };
  m.blocks.forEach((b: O, i) => {
    const w = `blocks[${i}]`;
    switch (b.type) {
      case "header":
        textObj(b.text, `${w}.text`, 150, true);
        break;
      case "section": {
        if (b.text === undefined && b.fields === undefined) out.push(`${w}: a section needs text or fields`);
        if (b.text !== undefined) textObj(b.text, `${w}.text`, 3000);
        if (b.fields !== undefined) {
          const f = b.fields as Json[];
          if (f.length > 10) out.push(`${w}.fields: ${f.length} > 10`);
          f.forEach((x, j) => textObj(x, `${w}.fields[${j}]`, 2000));
        }
        break;
      }
      case "actions": {
        const els = b.elements as O[];
        if (els.length > 25) out.push(`${w}.elements: ${els.length} > 25`);
        els.forEach((e, j) => {
          textObj(e.text, `${w}.elements[${j}].text`, 75, true);
          if (typeof e.url === "string" && e.url.length > 3000) out.push(`${w}.elements[${j}].url: ${e.url.length} > 3000`);
          if (typeof e.action_id === "string" && e.action_id.length > 255) out.push(`${w}.elements[${j}].action_id > 255`);
        });
        break;
      }
      case "context": {
        const els = b.elements as Json[];
        if (els.length > 10) out.push(`${w}.elements: ${els.length} > 10`);
        els.forEach((e, j) => textObj(e, `${w}.elements[${j}]`, 3000));
        break;
      }
      default:
        out.push(`${w}: unexpected block type ${JSON.stringify(b.type) ?? "none"}`);
    }
  });
  return out;
}

function event(type: NotificationEvent["type"], data: O, over: Partial<NotificationEvent> = {}): NotificationEvent {
  return { eventId: "evt_abc", type, tenantId: "acme", spaceId: "default", at: 1_800_000_000_000, data, ...over };
}

describe("Slack format", () => {
  // Invariant: the checker catches each limit it claims to check (so a passing message really fits).
  it("the checker catches every limit it checks", () => {
    const ok = { text: "x", blocks: [{ type: "header", text: { type: "plain_text", text: "h" } }] };
    expect(blockKitProblems(ok)).toEqual([]);
    expect(blockKitProblems({ ...ok, blocks: Array(51).fill(ok.blocks[0]) })).toContain("blocks: 51 > 50");
    expect(blockKitProblems({ text: "x", blocks: [{ type: "header", text: { type: "plain_text", text: "h".repeat(151) } }] })[0]).toContain("not in 1..150");
    expect(blockKitProblems({ text: "x", blocks: [{ type: "header", text: { type: "mrkdwn", text: "h" } }] })[0]).toContain("type mrkdwn");
    expect(blockKitProblems({ text: "x", blocks: [{ type: "section", text: { type: "mrkdwn", text: "s".repeat(3001) } }] })[0]).toContain("not in 1..3000");
    expect(blockKitProblems({ text: "x", blocks: [{ type: "section", fields: Array(11).fill({ type: "mrkdwn", text: "f" }) }] })[0]).toContain("11 > 10");
    expect(blockKitProblems({ text: "x", blocks: [{ type: "section", fields: [{ type: "mrkdwn", text: "f".repeat(2001) }] }] })[0]).toContain("not in 1..2000");
    expect(blockKitProblems({ text: "x", blocks: [{ type: "actions", elements: [{ type: "button", text: { type: "plain_text", text: "b".repeat(76) } }] }] })[0]).toContain("not in 1..75");
    expect(blockKitProblems({ text: "x", blocks: [{ type: "actions", elements: [{ type: "button", text: { type: "plain_text", text: "b" }, url: "u".repeat(3001) }] }] })[0]).toContain("3001 > 3000");
    expect(blockKitProblems({ text: "", blocks: [] })[0]).toContain("fallback text");
  });

  // Invariant: an approval request is a header naming the action, its facts as fields, the masked
  // params, and a button to the console's approval inbox.
  it("an approval request links to the console page that acts on it", () => {
    const msg = slackMessage(
      event("approval.requested", { approvalId: "apr_1", invocationId: "inv_1", action: "payments.refund", actor: { type: "agent", id: "support-bot" }, params: { amount: 25000, card: "[REDACTED]" }, reasons: ["refund-large: needs approval"], policyRef: "cedar:v3", quorum: 1, votes: 0, expiresAt: 1_800_000_600_000 }),
      "https://writ.example.com",
    );
    expect(blockKitProblems(msg)).toEqual([]);
    expect(msg.text).toBe("Approval needed: payments.refund");
    const json = JSON.stringify(msg);
    expect(json).toContain("https://writ.example.com/console/approvals#apr-apr_1");
    expect(json).toContain("[REDACTED]");
    expect(json).toContain("agent:support-bot");
    const rec = slackMessage(event("reconciliation.opened", { reconciliationId: "rec_9", invocationId: "inv_1", action: "payments.refund", reasonCode: "OUTCOME_AMBIGUOUS", reason: "timeout" }), "https://writ.example.com/");
    expect(JSON.stringify(rec)).toContain("https://writ.example.com/console/reconciliations#rec-rec_9");
    expect(JSON.stringify(slackMessage(event("approval.requested", { approvalId: "apr_1" }), undefined))).not.toContain("actions");
  });

  // Invariant: whatever an event carries (huge params, long reasons, long ids, markup characters,
  // astral characters), the message fits Block Kit's limits and stays valid text.
  it("fits Block Kit's limits for any event (property, seed printed)", () => {
    const seed = Number(process.env.SEED ?? Date.now() % 2 ** 31);
    console.log(`[notify-slack] fast-check seed ${seed}`);
    const text = fc.string({ unit: "grapheme", maxLength: 6000 });
    fc.assert(
      fc.property(
        fc.constantFrom(...NOTIFICATION_EVENTS),
        fc.record({
          approvalId: fc.string({ maxLength: 3500 }),
          reconciliationId: fc.string({ maxLength: 300 }),
          invocationId: fc.string({ maxLength: 300 }),
          action: text,
          reasons: fc.array(text, { maxLength: 5 }),
          reason: text,
          note: text,
          params: fc.dictionary(fc.string({ maxLength: 50 }), text, { maxKeys: 20 }),
          policyRef: text,
          status: fc.constantFrom("succeeded", "failed"),
        }),
        fc.string({ maxLength: 400 }),
        (type, data, spaceId) => {
          const msg = slackMessage(event(type, data, { spaceId }), "https://writ.example.com");
          const problems = blockKitProblems(msg);
          expect(problems).toEqual([]);
          // No lone surrogate was left by a cut.
          expect(JSON.stringify(msg)).not.toMatch(/\\ud[89ab][0-9a-f]{2}(?!\\ud[c-f])/i);
        },
      ),
      { seed, numRuns: 200 },
    );
  });
});
