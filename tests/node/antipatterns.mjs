// Seed 001 §10 "Anti-patterns con código ejecutable", the ❌ loops transcribed to plain JavaScript.
// The seed's snippets are fragments; what each needs to run is CHANGED or SUPPLIED, and only that:
//   - `tools` is added to the request (the snippets send none, so no model could ask for a tool);
//   - "Ejecutar tools..." / `executeToolSomewhere` are §2's `executeTools` + `buildToolResultMessage`
//     over §3's customer-support handlers, the seed's own executor;
//   - each fragment is wrapped in a function that takes the question and returns the last text.
// The defect each one shows is left exactly as the seed writes it.
import Anthropic from "@anthropic-ai/sdk";
import {
  CUSTOMER_SUPPORT_TOOLS as tools,
  buildToolResultMessage,
  createCustomerSupportHandlers,
  executeTools,
} from "./seed001.mjs";

const client = new Anthropic();
const model = "claude-opus-4-8";

function lastText(messages) {
  const content = messages[messages.length - 1].content;
  const textBlock = content.find((b) => b.type === "text");
  return textBlock?.text ?? "";
}

// Anti-pattern 1: Parsear texto natural para terminar.
export async function textStop(question) {
  const handlers = createCustomerSupportHandlers({ verifiedCustomerId: null });
  const messages = [{ role: "user", content: question }];
  // ❌ MAL: falla cuando Claude responde en otro idioma o con variaciones
  while (true) {
    const response = await client.messages.create({ model, max_tokens: 4096, tools, messages });
    messages.push({ role: "assistant", content: response.content });

    const textBlock = response.content.find((b) => b.type === "text");
    const text = textBlock?.text ?? "";

    // Frágil: "Terminé con éxito el trabajo", "I'm done", "Task completed" → todos fallan
    if (text.includes("terminé") || text.includes("done") || text.includes("complete")) break;

    // Ejecutar tools... (SUPPLIED: §2's executor, when the answer has any tool_use)
    const usos = response.content.filter((b) => b.type === "tool_use");
    if (usos.length > 0) messages.push(buildToolResultMessage(await executeTools(usos, handlers)));
  }
  return lastText(messages);
}

// Anti-pattern 2: Iteration cap como único mecanismo de parada.
export async function capOnly(question) {
  const handlers = createCustomerSupportHandlers({ verifiedCustomerId: null });
  const messages = [{ role: "user", content: question }];
  // ❌ MAL: corta el trabajo a la mitad si el modelo todavía necesita herramientas
  for (let i = 0; i < 10; i++) {
    const response = await client.messages.create({ model, max_tokens: 4096, tools, messages });
    messages.push({ role: "assistant", content: response.content });
    // Al llegar a i=10, el loop termina aunque stop_reason sea 'tool_use'
    // (SUPPLIED: the tools the answer asks for run, or the next request could not be sent)
    const usos = response.content.filter((b) => b.type === "tool_use");
    if (usos.length > 0) messages.push(buildToolResultMessage(await executeTools(usos, handlers)));
  }
  return lastText(messages);
}

// Anti-pattern 3: No agregar tool results al historial. The seed's fragment is one turn; it runs
// inside §10's ✅ loop (stop on end_turn, continue on tool_use) so that the next turn happens.
export async function noToolResults(question) {
  const handlers = createCustomerSupportHandlers({ verifiedCustomerId: null });
  const executeToolSomewhere = (name, input) => executeTools([{ id: "-", name, input }], handlers);
  const messages = [{ role: "user", content: question }];
  while (true) {
    // ❌ MAL: el siguiente turno de Claude no sabe qué devolvió la herramienta
    const response = await client.messages.create({ model, max_tokens: 4096, tools, messages });
    messages.push({ role: "assistant", content: response.content });

    if (response.stop_reason === "end_turn") break;
    if (response.stop_reason === "tool_use") {
      for (const block of response.content) {
        if (block.type !== "tool_use") continue;
        await executeToolSomewhere(block.name, block.input);
        // ❌ BUG: el resultado se ejecutó pero NO se agregó al historial
        // Claude asume en el siguiente turno que la herramienta nunca respondió
      }
      // Continuar sin tool_results → Claude alucina o repite la llamada
      continue;
    }
    throw new Error(`stop_reason inesperado: ${response.stop_reason}`);
  }
  return lastText(messages);
}
