// The official @anthropic-ai/sdk: client.messages.stream (a MessageStream that assembles the
// message). The second turn sends the assistant's content blocks back and a tool_result block per
// tool_use, as Anthropic's tool-use guide does.
import Anthropic from "@anthropic-ai/sdk";
import { MESSAGES, args, connection, converse, main, read, task } from "./common.mjs";

const PAIRS = [["anthropic-js", MESSAGES]];
const TOOLS = [{ name: "read", description: task.read_description, input_schema: task.read_parameters }];

async function runCell(client, dialect, scenario) {
  const { baseURL, model } = connection(client, dialect, scenario);
  const anthropic = new Anthropic({ baseURL, apiKey: "unused", maxRetries: 0, timeout: task.timeout_ms });
  const messages = [{ role: "user", content: task.prompts[scenario] }];
  const ask = async (turn) => {
    const stream = anthropic.messages.stream({ model, max_tokens: 1024, system: task.system, messages, tools: TOOLS });
    for await (const event of stream) {
      if (event.type === "content_block_delta" && event.delta.type === "text_delta") {
        turn.text += event.delta.text;
        turn.deltas += 1;
      }
      if (scenario === "abort" && event.type === "content_block_delta") {
        turn.aborted = true;
        stream.abort();
        return null;
      }
    }
    const message = await stream.finalMessage();
    turn.finish = message.stop_reason;
    const uses = message.content.filter((b) => b.type === "tool_use");
    turn.calls = uses.map((b) => ({ id: b.id, name: b.name, arguments: args(b.input) }));
    turn.usage = { input: message.usage.input_tokens, output: message.usage.output_tokens };
    return message;
  };
  const answer = (message) => {
    messages.push({ role: "assistant", content: message.content });
    const uses = message.content.filter((b) => b.type === "tool_use");
    messages.push({ role: "user", content: uses.map((b) => ({ type: "tool_result", tool_use_id: b.id, content: read(b.input) })) });
  };
  return converse(scenario, ask, answer);
}

await main(PAIRS, runCell);
