// An advanced agent loop and its orchestration, as a TypeScript guide writes them, transcribed to
// plain JavaScript: `runAgentLoop`, `executeTools`/`buildToolResultMessage`, the customer-support
// tools and handlers, `runSubAgent`/`runCoordinator`. Only the type annotations are gone; the loops,
// the request fields and the stop_reason handling are the original's, so the harness judges that
// code. What the original leaves undefined (its `db`, `queue`, `generateTicketId`, `parseDecomposition`,
// `buildHandlersForTask`) is supplied below, marked SUPPLIED, as small as it can be.
import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic();

// ---- The agent loop (verbatim) ----

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

    // Add the assistant's response to the history
    messages.push({ role: "assistant", content: response.content });

    if (response.stop_reason === "end_turn") {
      // Extract the final text
      const textBlock = response.content.find((b) => b.type === "text");
      return textBlock ? textBlock.text : "";
    }

    if (response.stop_reason === "tool_use") {
      // Collect the results of every tool_use of the turn
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

      // Add the results as the user's turn
      messages.push({ role: "user", content: toolResults });
      continue;
    }

    // Unexpected stop_reason
    throw new Error(`unexpected stop_reason: ${response.stop_reason}`);
  }
}

// ---- Tool executor with history (verbatim) ----

export async function executeTools(toolUseBlocks, handlers) {
  return Promise.all(
    toolUseBlocks.map(async (block) => {
      const handler = handlers[block.name];
      if (!handler) {
        return {
          toolUseId: block.id,
          result: `Unknown tool: ${block.name}`,
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

// ---- Custom tools: customer support (verbatim) ----

export const CUSTOMER_SUPPORT_TOOLS = [
  {
    name: "get_customer",
    description: "Looks a customer up by ID. Must be called before any other operation.",
    input_schema: {
      type: "object",
      properties: {
        customer_id: { type: "string", description: "Unique customer ID" },
      },
      required: ["customer_id"],
    },
  },
  {
    name: "lookup_order",
    description: "Looks an order up by ID.",
    input_schema: {
      type: "object",
      properties: {
        order_id: { type: "string", description: "Order ID" },
      },
      required: ["order_id"],
    },
  },
  {
    name: "process_refund",
    description: "Processes a refund. Requires a customer_id verified beforehand.",
    input_schema: {
      type: "object",
      properties: {
        order_id: { type: "string" },
        amount: { type: "number", description: "Amount in cents" },
        customer_id: { type: "string", description: "ID of the customer already verified" },
      },
      required: ["order_id", "amount", "customer_id"],
    },
  },
  {
    name: "escalate_to_human",
    description: "Escalates the case to a human agent.",
    input_schema: {
      type: "object",
      properties: {
        reason: { type: "string" },
        context: { type: "string", description: "Summary of the case" },
      },
      required: ["reason", "context"],
    },
  },
];

// SUPPLIED: the original's database, queue and ticket ids, in memory.
const db = {
  customers: { findById: async (id) => ({ "C-42": { id: "C-42", name: "Ada Lovelace" } })[id] ?? null },
  orders: { findById: async (id) => ({ "O-7": { id: "O-7", status: "shipped", total: 1999 } })[id] ?? null },
  refunds: { create: async (refund) => ({ refund_id: "R-1", ...refund }) },
};
const queue = { push: async () => {} };
const generateTicketId = () => "T-1";

export function createCustomerSupportHandlers(state) {
  return {
    get_customer: async (input) => {
      const customerId = input.customer_id;
      // Simulated database call
      const customer = await db.customers.findById(customerId);
      if (customer) {
        state.verifiedCustomerId = customerId; // record the verification
      }
      return customer ?? { error: "Customer not found" };
    },

    lookup_order: async (input) => {
      return db.orders.findById(input.order_id);
    },

    process_refund: async (input) => {
      // ✅ A prerequisite in code: do not rely on the model
      if (!state.verifiedCustomerId) {
        throw new Error("PREREQUISITE_FAILED: get_customer must be called first");
      }
      if (state.verifiedCustomerId !== input.customer_id) {
        throw new Error("SECURITY_ERROR: customer_id does not match the verified one");
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

// ---- Coordinator and subagents ----

// SUPPLIED: the coordinator asks for "JSON with the tasks"; each task names its tools, which are
// looked up in the definitions above (a model cannot be trusted to write schemas).
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
    // CHANGED: the original passes `config.toolHandlers` (a map) where `runAgentLoop` expects a
    // function, which TypeScript rejects; as plain JS every tool call would fail with
    // "toolExecutor is not a function". The map is wrapped in the executor the signature asks for.
    dispatch(config.toolHandlers),
  );
}

export async function runCoordinator(userRequest) {
  // 1. The coordinator decides the decomposition
  const decompositionResponse = await client.messages.create({
    model: "claude-opus-4-8",
    max_tokens: 1024,
    system: "You are a coordinator. Return JSON with the tasks for subagents.",
    messages: [{ role: "user", content: userRequest }],
  });

  const tasks = parseDecomposition(decompositionResponse);

  // 2. Launch the subagents in parallel, with injected context
  const contextSummary = `Project context: ${userRequest}`;

  const subAgentConfigs = tasks.map((task) => ({
    name: task.name,
    systemPrompt: `${task.systemPrompt}\n\nGlobal context: ${contextSummary}`,
    task: task.description,
    tools: task.tools,
    toolHandlers: buildHandlersForTask(task),
  }));

  const results = await Promise.all(subAgentConfigs.map(runSubAgent));

  // 3. The coordinator consolidates the results
  const consolidationResponse = await client.messages.create({
    model: "claude-opus-4-8",
    max_tokens: 2048,
    system: "Consolidate the subagents' results into one coherent answer.",
    messages: [{
      role: "user",
      content: [
        `Original request: ${userRequest}`,
        ...results.map((r, i) => `Subagent result ${i + 1}: ${r}`),
      ].join("\n\n"),
    }],
  });

  const textBlock = consolidationResponse.content.find((b) => b.type === "text");
  return textBlock ? textBlock.text : "";
}

// ---- Entry points for record.mjs: the question is the user's message ----

export async function supportAgent(question) {
  const handlers = createCustomerSupportHandlers({ verifiedCustomerId: null });
  return runAgentLoop("You are a customer-support agent.", question, CUSTOMER_SUPPORT_TOOLS, dispatch(handlers));
}
