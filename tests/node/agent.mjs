// A complete TypeScript agent loop, as a tutorial writes it, transcribed to plain JavaScript so
// Node runs it without a compiler. Only the type annotations are gone: the loop, the stop_reason
// switch, Promise.all over the tools and is_error on failure are the original's, line for line, so
// the harness judges that code and not a tidied copy of it. The client reads ANTHROPIC_BASE_URL
// and the key from the environment, as the original's `new Anthropic()` does.
import Anthropic from "@anthropic-ai/sdk";

const MODEL = "claude-sonnet-5-5";
const MAX_STEPS = 10;
const client = new Anthropic();

const tools = [{
  name: "search_docs",
  description: "Searches the internal documentation. Returns up to 5 snippets with their titles.",
  input_schema: {
    type: "object",
    properties: { query: { type: "string", description: "Search terms" } },
    required: ["query"],
  },
}];

async function searchDocs(input) {
  return `No results for "${input.query}"`; // replace with your search
}

async function run(b) {
  try {
    const output = await searchDocs(b.input);
    return { type: "tool_result", tool_use_id: b.id, content: output };
  } catch (e) {
    return { type: "tool_result", tool_use_id: b.id, content: `Error: ${e}`, is_error: true };
  }
}

export async function agent(question) {
  const messages = [{ role: "user", content: question }];
  for (let step = 0; step < MAX_STEPS; step++) {
    const resp = await client.messages.create({ model: MODEL, max_tokens: 2048, tools, messages });
    messages.push({ role: "assistant", content: resp.content });

    switch (resp.stop_reason) {
      case "end_turn":
      case "stop_sequence":
        return resp.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("");
      case "tool_use": {
        const uses = resp.content.filter((b) => b.type === "tool_use");
        messages.push({ role: "user", content: await Promise.all(uses.map(run)) });
        break;
      }
      case "pause_turn":
        break; // call again with the same history
      case "max_tokens":
        throw new Error("Response cut: raise max_tokens or split the task");
      case "refusal":
        return "I cannot help with this request.";
      default:
        throw new Error(`unknown stop_reason: ${resp.stop_reason}`);
    }
  }
  throw new Error(`Unfinished after ${MAX_STEPS} steps`);
}
