// A minimal `agenticLoop`, as an introduction to the tool_use cycle writes it, transcribed to plain
// JavaScript. Types stripped; `async` added (the original awaits inside a plain `function`, a syntax
// error); its undefined `executeTool` is SUPPLIED below. The loop itself is the original's: it only checks
// stop_reason === "tool_use", pushes the assistant turn only inside the while (so the last answer
// never joins `messages`), and returns the last response whatever its stop_reason.
import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic();

export async function agenticLoop(tools, messages) {
  let response = await client.messages.create({
    model: "claude-sonnet-4-20250514",
    max_tokens: 4096,
    tools,
    messages,
  });

  while (response.stop_reason === "tool_use") {
    const toolBlocks = response.content.filter(
      (b) => b.type === "tool_use",
    );

    const results = await Promise.all(
      toolBlocks.map((block) => executeTool(block.name, block.input)),
    );

    messages.push({ role: "assistant", content: response.content });
    messages.push({
      role: "user",
      content: toolBlocks.map((block, i) => ({
        type: "tool_result",
        tool_use_id: block.id,
        content: JSON.stringify(results[i]),
      })),
    });

    response = await client.messages.create({
      model: "claude-sonnet-4-20250514",
      max_tokens: 4096,
      tools,
      messages,
    });
  }

  return response;
}

// SUPPLIED: one tool (the original's own example result: a file of 42 lines).
const TOOLS = [{
  name: "count_lines",
  description: "Counts the lines of a file of the repository.",
  input_schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
}];

async function executeTool(name, input) {
  if (name !== "count_lines") throw new Error(`unknown tool: ${name}`);
  return { path: input.path, lines: 42 };
}

function text(response) {
  return response.content.filter((b) => b.type === "text").map((b) => b.text).join("");
}

// Entry points for record.mjs. One question: the caller prints the final response's text.
export async function ask(question) {
  return text(await agenticLoop(TOOLS, [{ role: "user", content: question }]));
}

// Two questions in one conversation, as `agenticLoop(tools, messages)` invites: the caller keeps
// `messages` and adds the follow-up to it. The question holds both, separated by " || ".
export async function askTwice(questions) {
  const [first, second] = questions.split(" || ");
  const messages = [{ role: "user", content: first }];
  const answers = [text(await agenticLoop(TOOLS, messages))];
  messages.push({ role: "user", content: second });
  answers.push(text(await agenticLoop(TOOLS, messages)));
  return answers.join("\n");
}
