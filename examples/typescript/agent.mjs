// An agent loop on the official TypeScript SDK, run by the harness as a command.
//
// The three lines that connect it: `new Anthropic()` reads ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY,
// which the harness points at the run's endpoint; the task's request fields come from the file named
// by HARNESS_TASK; tools run at POST {base_url}/harness/tools/{name}. The last line printed is the answer.
import { readFileSync } from "node:fs";
import Anthropic from "@anthropic-ai/sdk";

const task = JSON.parse(readFileSync(process.env.HARNESS_TASK, "utf8"));
const client = new Anthropic();

async function runTool(block) {
  const answer = await fetch(`${process.env.ANTHROPIC_BASE_URL}/harness/tools/${block.name}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-harness-tool-use-id": block.id },
    body: JSON.stringify(block.input),
  });
  const { content, is_error } = await answer.json();
  return { type: "tool_result", tool_use_id: block.id, content, is_error };
}

const messages = [{ role: "user", content: task.turns[0] }];
for (let step = 0; step < (task.limits.steps ?? 10); step++) {
  const response = await client.messages.create({ ...task.request, messages });
  messages.push({ role: "assistant", content: response.content });
  if (response.stop_reason !== "tool_use") {
    console.log(response.content.filter((b) => b.type === "text").map((b) => b.text).join(""));
    process.exit(0);
  }
  const uses = response.content.filter((b) => b.type === "tool_use");
  messages.push({ role: "user", content: await Promise.all(uses.map(runTool)) });
}
console.log(JSON.stringify({ outcome: "limit", limit: "steps", text: "out of steps" }));
