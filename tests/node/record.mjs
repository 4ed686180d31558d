// Runs a transcribed agent on one question with Polly.JS recording every request the official
// TypeScript SDK makes, and writes the HAR that `harness check` reads.
//
//   node record.mjs QUESTION RECORDINGS_DIR [MODULE#EXPORT]   (ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY from the env)
//
// The agent is EXPORT of ./MODULE, an async function of the question; default: the tutorial's
// `agent` (agent.mjs#agent).
//
// Prints the agent's answer on stdout; on an agent error prints it on stderr and exits 1. Either way
// the recording is written: a loop that throws is exactly the run one wants to inspect.
import FetchAdapter from "@pollyjs/adapter-fetch";
import { Polly } from "@pollyjs/core";
import FSPersister from "@pollyjs/persister-fs";

const [question, recordingsDir, agentSpec = "agent.mjs#agent"] = process.argv.slice(2);
const [agentModule, agentName] = agentSpec.split("#");
if (!question || !recordingsDir || !agentName) {
  console.error("usage: node record.mjs QUESTION RECORDINGS_DIR [MODULE#EXPORT]");
  process.exit(2);
}

Polly.register(FetchAdapter);
Polly.register(FSPersister);
const polly = new Polly(agentSpec.replace(/[^A-Za-z0-9]+/g, "-"), {
  // The SDK calls Node's global fetch (undici), which never touches the `http` module that
  // @pollyjs/adapter-node-http patches; the fetch adapter wraps globalThis.fetch instead.
  adapters: ["fetch"],
  adapterOptions: { fetch: { context: globalThis } },
  persister: "fs",
  persisterOptions: { fs: { recordingsDir } },
  mode: "record",
  // Error answers (a 429, a 529) are part of the run the checker judges, not something to drop.
  recordFailedRequests: true,
  logLevel: "warn",
});

// A recording is shared: credentials stay out of it, as any real recorder setup would keep them.
const SECRET_HEADERS = new Set(["authorization", "x-api-key"]);
polly.server.any().on("beforePersist", (_req, recording) => {
  recording.request.headers = recording.request.headers.map((h) =>
    SECRET_HEADERS.has(h.name.toLowerCase()) ? { ...h, value: "[REDACTED]" } : h);
});

// The agent builds its client when its module loads and the SDK keeps the fetch it finds then,
// so the agent is imported only once Polly has wrapped fetch.
const agent = (await import(`./${agentModule}`))[agentName];
let status = 0;
try {
  console.log(await agent(question));
} catch (e) {
  console.error(`${agentName}: ${e instanceof Error ? e.message : e}`);
  status = 1;
} finally {
  await polly.stop();
}
process.exit(status);
