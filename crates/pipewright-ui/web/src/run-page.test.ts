import { describe, expect, it } from "vitest";
import { continuesSentence } from "./run-page";

describe("the approval panel's sentence", () => {
  const pending = { step_key: "1", kind: "gate", prompt: "Ship?" };

  it("tells a paused recipe's reader to resume it", () => {
    const s = continuesSentence({ ...pending, continues: "resume" }, "R1");
    expect(s).toContain("pipewright run --resume R1");
    expect(s).toContain("paused");
  });

  it("tells a live run's reader that it goes on by itself", () => {
    const s = continuesSentence({ ...pending, continues: "live" }, "R1");
    expect(s).toContain("goes on by itself");
    expect(s).not.toContain("--resume");
  });

  it("tells a reader of a run on the engine that the engine goes on by itself", () => {
    const s = continuesSentence({ ...pending, continues: "engine" }, "R1");
    expect(s).toContain("the engine continues it by itself");
    expect(s).toContain("pipewright run --resume R1 --engine restate");
  });

  it("says nothing it does not know", () => {
    expect(continuesSentence({ ...pending, continues: "later" }, "R1")).toBe("");
  });
});
