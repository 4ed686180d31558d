// Seed 001 ("Agentic Loop Avanzado y Orquestación"), transcribed to plain JavaScript: §1 `runAgentLoop`,
// §2 `executeTools`/`buildToolResultMessage`, §3 the customer-support tools and handlers, §4
// `runSubAgent`/`runCoordinator`. Only the type annotations are gone; the loops, the request fields
// and the stop_reason handling are the seed's, so the harness judges the seed's code. What the seed
// leaves undefined (its `db`, `queue`, `generateTicketId`, `parseDecomposition`,
// `buildHandlersForTask`) is supplied below, marked SUPPLIED, as small as it can be.
import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic();

// ---- §1 El agentic loop en código real (verbatim) ----

export async function runAgentLoop(systemPrompt, userMessage, tools, toolExecutor) {
  const messages = [
    { role: "user", content: userMessage },
  ];

  while (true) {
    const response = await client.messages.create({
      model: "claude-opus-4-8",
      max_tokens: 4096,
      output_config: { effort: "xhigh" },
      system: systemPrompt,
      tools,
      messages,
    });

    // Agregar respuesta del assistant al historial
    messages.push({ role: "assistant", content: response.content });

    if (response.stop_reason === "end_turn") {
      // Extraer texto final
      const textBlock = response.content.find((b) => b.type === "text");
      return textBlock ? textBlock.text : "";
    }

    if (response.stop_reason === "tool_use") {
      // Recolectar resultados de todas las tool_use del turno
      const toolResults = [];

      for (const block of response.content) {
        if (block.type !== "tool_use") continue;

        let result;
        let isError = false;

        try {
          result = await toolExecutor(block.name, block.input);
        } catch (err) {
          result = err instanceof Error ? err.message : String(err);
          isError = true;
        }

        toolResults.push({
          type: "tool_result",
          tool_use_id: block.id,
          content: JSON.stringify(result),
          is_error: isError,
        });
      }

      // Agregar resultados como turno del user
      messages.push({ role: "user", content: toolResults });
      continue;
    }

    // stop_reason inesperado
    throw new Error(`stop_reason inesperado: ${response.stop_reason}`);
  }
}

// ---- §2 Tool executor con historial (verbatim) ----

export async function executeTools(toolUseBlocks, handlers) {
  return Promise.all(
    toolUseBlocks.map(async (block) => {
      const handler = handlers[block.name];
      if (!handler) {
        return {
          toolUseId: block.id,
          result: `Herramienta desconocida: ${block.name}`,
          isError: true,
        };
      }
      try {
        const result = await handler(block.input);
        return { toolUseId: block.id, result, isError: false };
      } catch (err) {
        return {
          toolUseId: block.id,
          result: err instanceof Error ? err.message : String(err),
          isError: true,
        };
      }
    }),
  );
}

export function buildToolResultMessage(results) {
  return {
    role: "user",
    content: results.map((r) => ({
      type: "tool_result",
      tool_use_id: r.toolUseId,
      content: JSON.stringify(r.result),
      is_error: r.isError,
    })),
  };
}

// ---- §3 Herramientas personalizadas: Customer Support (verbatim) ----

export const CUSTOMER_SUPPORT_TOOLS = [
  {
    name: "get_customer",
    description: "Busca datos del cliente por ID. Debe llamarse antes de cualquier operación.",
    input_schema: {
      type: "object",
      properties: {
        customer_id: { type: "string", description: "ID único del cliente" },
      },
      required: ["customer_id"],
    },
  },
  {
    name: "lookup_order",
    description: "Busca datos de un pedido por ID.",
    input_schema: {
      type: "object",
      properties: {
        order_id: { type: "string", description: "ID del pedido" },
      },
      required: ["order_id"],
    },
  },
  {
    name: "process_refund",
    description: "Procesa un reembolso. Requiere customer_id verificado previamente.",
    input_schema: {
      type: "object",
      properties: {
        order_id: { type: "string" },
        amount: { type: "number", description: "Monto en centavos" },
        customer_id: { type: "string", description: "ID del cliente ya verificado" },
      },
      required: ["order_id", "amount", "customer_id"],
    },
  },
  {
    name: "escalate_to_human",
    description: "Escala el caso a un agente humano.",
    input_schema: {
      type: "object",
      properties: {
        reason: { type: "string" },
        context: { type: "string", description: "Resumen del caso" },
      },
      required: ["reason", "context"],
    },
  },
];

// SUPPLIED: the seed's database, queue and ticket ids, in memory.
const db = {
  customers: { findById: async (id) => ({ "C-42": { id: "C-42", name: "Ada Lovelace" } })[id] ?? null },
  orders: { findById: async (id) => ({ "O-7": { id: "O-7", status: "enviado", total: 1999 } })[id] ?? null },
  refunds: { create: async (refund) => ({ refund_id: "R-1", ...refund }) },
};
const queue = { push: async () => {} };
const generateTicketId = () => "T-1";

export function createCustomerSupportHandlers(state) {
  return {
    get_customer: async (input) => {
      const customerId = input.customer_id;
      // Simular llamada a base de datos
      const customer = await db.customers.findById(customerId);
      if (customer) {
        state.verifiedCustomerId = customerId; // registrar verificación
      }
      return customer ?? { error: "Cliente no encontrado" };
    },

    lookup_order: async (input) => {
      return db.orders.findById(input.order_id);
    },

    process_refund: async (input) => {
      // ✅ Prerrequisito programático: no depender del modelo
      if (!state.verifiedCustomerId) {
        throw new Error("PREREQUISITE_FAILED: debe llamarse get_customer primero");
      }
      if (state.verifiedCustomerId !== input.customer_id) {
        throw new Error("SECURITY_ERROR: customer_id no coincide con el verificado");
      }
      return db.refunds.create({
        orderId: input.order_id,
        amount: input.amount,
        customerId: state.verifiedCustomerId,
      });
    },

    escalate_to_human: async (input) => {
      await queue.push({
        reason: input.reason,
        context: input.context,
        timestamp: new Date().toISOString(),
      });
      return { escalated: true, ticket_id: generateTicketId() };
    },
  };
}

// SUPPLIED: `runAgentLoop` takes an executor `(name, input)`, the handlers are a map by name.
export function dispatch(handlers) {
  return (name, input) => handlers[name](input);
}

// ---- §4 Patrón coordinador-subagente ----

// SUPPLIED: the coordinator asks for "JSON con las tareas"; each task names its tools, which are
// looked up in §3's definitions (a model cannot be trusted to write schemas).
function parseDecomposition(response) {
  const textBlock = response.content.find((b) => b.type === "text");
  return JSON.parse(textBlock.text).map((task) => ({
    ...task,
    tools: CUSTOMER_SUPPORT_TOOLS.filter((t) => task.tools.includes(t.name)),
  }));
}

// SUPPLIED: each subagent gets its own state, so one's verification never authorises another.
function buildHandlersForTask(_task) {
  return createCustomerSupportHandlers({ verifiedCustomerId: null });
}

async function runSubAgent(config) {
  return runAgentLoop(
    config.systemPrompt,
    config.task,
    config.tools,
    // CHANGED: the seed passes `config.toolHandlers` (a map) where `runAgentLoop` expects a
    // function, which TypeScript rejects; as plain JS every tool call would fail with
    // "toolExecutor is not a function". The map is wrapped in the executor the signature asks for.
    dispatch(config.toolHandlers),
  );
}

export async function runCoordinator(userRequest) {
  // 1. Coordinador decide la descomposición
  const decompositionResponse = await client.messages.create({
    model: "claude-opus-4-8",
    max_tokens: 1024,
    system: "Eres un coordinador. Devuelve JSON con las tareas para subagentes.",
    messages: [{ role: "user", content: userRequest }],
  });

  const tasks = parseDecomposition(decompositionResponse);

  // 2. Lanzar subagentes en paralelo con contexto inyectado
  const contextSummary = `Contexto del proyecto: ${userRequest}`;

  const subAgentConfigs = tasks.map((task) => ({
    name: task.name,
    systemPrompt: `${task.systemPrompt}\n\nContexto global: ${contextSummary}`,
    task: task.description,
    tools: task.tools,
    toolHandlers: buildHandlersForTask(task),
  }));

  const results = await Promise.all(subAgentConfigs.map(runSubAgent));

  // 3. Coordinador consolida resultados
  const consolidationResponse = await client.messages.create({
    model: "claude-opus-4-8",
    max_tokens: 2048,
    system: "Consolida los resultados de los subagentes en una respuesta coherente.",
    messages: [{
      role: "user",
      content: [
        `Solicitud original: ${userRequest}`,
        ...results.map((r, i) => `Resultado subagente ${i + 1}: ${r}`),
      ].join("\n\n"),
    }],
  });

  const textBlock = consolidationResponse.content.find((b) => b.type === "text");
  return textBlock ? textBlock.text : "";
}

// ---- Entry points for record.mjs: the question is the user's message ----

export async function supportAgent(question) {
  const handlers = createCustomerSupportHandlers({ verifiedCustomerId: null });
  return runAgentLoop("Eres un agente de soporte al cliente.", question, CUSTOMER_SUPPORT_TOOLS, dispatch(handlers));
}
