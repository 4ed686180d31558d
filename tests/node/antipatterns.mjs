// Three anti-patterns of agent loops, the ❌ loops a guide shows to warn against them, transcribed to
// plain JavaScript. The snippets are fragments; what each needs to run is CHANGED or SUPPLIED, and
// only that:
//   - `tools` is added to the request (the snippets send none, so no model could ask for a tool);
//   - "Run the tools..." / `executeToolSomewhere` are orchestration.mjs's `executeTools` +
//     `buildToolResultMessage` over its customer-support handlers, the guide's own executor;
//   - each fragment is wrapped in a function that takes the question and returns the last text.
// The defect each one shows is left exactly as the guide writes it.
import Anthropic from "@anthropic-ai/sdk";
import {
  CUSTOMER_SUPPORT_TOOLS as tools,
  buildToolResultMessage,
  createCustomerSupportHandlers,
  executeTools,
} from "./orchestration.mjs";

const client = new Anthropic();
const model = "claude-opus-4-8";

function lastText(messages) {
  const content = messages[messages.length - 1].content;
  const textBlock = content.find((b) => b.type === "text");
  return textBlock?.text ?? "";
}

// Anti-pattern 1: parsing natural language to decide when to stop.
export async function textStop(question) {
  const handlers = createCustomerSupportHandlers({ verifiedCustomerId: null });
  const messages = [{ role: "user", content: question }];
  // ❌ BAD: fails when Claude answers in another language or in other words
  while (true) {
    const response = await client.messages.create({ model, max_tokens: 4096, tools, messages });
    messages.push({ role: "assistant", content: response.content });

    const textBlock = response.content.find((b) => b.type === "text");
    const text = textBlock?.text ?? "";

    // Fragile: "I wrapped the work up", "All set", "Mission accomplished" → each one fails
    if (text.includes("finished") || text.includes("done") || text.includes("complete")) break;

    // Run the tools... (SUPPLIED: the guide's executor, when the answer has any tool_use)
    const uses = response.content.filter((b) => b.type === "tool_use");
    if (uses.length > 0) messages.push(buildToolResultMessage(await executeTools(uses, handlers)));
  }
  return lastText(messages);
}

// Anti-pattern 2: an iteration cap as the only way to stop.
export async function capOnly(question) {
  const handlers = createCustomerSupportHandlers({ verifiedCustomerId: null });
  const messages = [{ role: "user", content: question }];
  // ❌ BAD: cuts the work halfway when the model still needs tools
  for (let i = 0; i < 10; i++) {
    const response = await client.messages.create({ model, max_tokens: 4096, tools, messages });
    messages.push({ role: "assistant", content: response.content });
    // At i=10 the loop ends even when stop_reason is 'tool_use'
    // (SUPPLIED: the tools the answer asks for run, or the next request could not be sent)
    const uses = response.content.filter((b) => b.type === "tool_use");
    if (uses.length > 0) messages.push(buildToolResultMessage(await executeTools(uses, handlers)));
  }
  return lastText(messages);
}

// Anti-pattern 3: not adding the tool results to the history. The guide's fragment is one turn; it
// runs inside the guide's ✅ loop (stop on end_turn, continue on tool_use) so that the next turn happens.
export async function noToolResults(question) {
  const handlers = createCustomerSupportHandlers({ verifiedCustomerId: null });
  const executeToolSomewhere = (name, input) => executeTools([{ id: "-", name, input }], handlers);
  const messages = [{ role: "user", content: question }];
  while (true) {
    // ❌ BAD: Claude's next turn does not know what the tool returned
    const response = await client.messages.create({ model, max_tokens: 4096, tools, messages });
    messages.push({ role: "assistant", content: response.content });

    if (response.stop_reason === "end_turn") break;
    if (response.stop_reason === "tool_use") {
      for (const block of response.content) {
        if (block.type !== "tool_use") continue;
        await executeToolSomewhere(block.name, block.input);
        // ❌ BUG: the tool ran but its result was NOT added to the history
        // Claude assumes on its next turn that the tool never answered
      }
      // Going on without tool_results → Claude hallucinates or repeats the call
      continue;
    }
    throw new Error(`unexpected stop_reason: ${response.stop_reason}`);
  }
  return lastText(messages);
}
