// The official openai JavaScript SDK: its streaming helpers client.chat.completions.stream (which
// assembles the completion) and client.responses.stream (which assembles the response). The
// second turn sends the assistant message and tool messages back (Chat Completions), or the
// output items and function_call_output items (Responses), as the SDK's own examples do — chained,
// only the function_call_output items and previous_response_id, as OpenAI's conversation-state guide does.
import OpenAI from "openai";
import { CHAT, RESPONSES, args, connection, converse, main, read, task } from "./common.mjs";

const PAIRS = [
  ["openai-js", CHAT],
  ["openai-js", RESPONSES],
];
const FUNCTION = { name: "read", description: task.read_description, parameters: task.read_parameters };
const TERMINAL = ["response.completed", "response.incomplete", "response.failed"];

async function runCell(client, dialect, scenario, chained) {
  const { baseURL, model } = connection(client, dialect, scenario);
  const openai = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: task.timeout_ms });
  return dialect === CHAT ? chat(openai, model, scenario) : responses(openai, model, scenario, chained);
}

function chat(openai, model, scenario) {
  const messages = [
    { role: "system", content: task.system },
    { role: "user", content: task.prompts[scenario] },
  ];
  const tools = [{ type: "function", function: FUNCTION }];
  const ask = async (turn) => {
    const stream = openai.chat.completions.stream({ model, messages, tools, stream_options: { include_usage: true } });
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta;
      if (delta?.content) {
        turn.text += delta.content;
        turn.deltas += 1;
      }
      if (scenario === "abort" && (delta?.content || delta?.tool_calls)) {
        turn.aborted = true;
        stream.abort();
        return null;
      }
    }
    const completion = await stream.finalChatCompletion();
    const { message, finish_reason: finish } = completion.choices[0];
    turn.finish = finish;
    turn.calls = (message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: args(c.function.arguments) }));
    const usage = completion.usage;
    turn.usage = usage ? { input: usage.prompt_tokens, output: usage.completion_tokens } : null;
    return message;
  };
  const answer = (message) => {
    messages.push(message);
    for (const call of message.tool_calls) {
      messages.push({ role: "tool", tool_call_id: call.id, content: read(call.function.arguments) });
    }
  };
  return converse(scenario, ask, answer);
}

function responses(openai, model, scenario, chained) {
  const input = [{ role: "user", content: task.prompts[scenario] }];
  const tools = [{ type: "function", ...FUNCTION }];
  const previous = {}; // chained: the previous_response_id of the next request
  const ask = async (turn) => {
    // instructions are not carried over by previous_response_id: sent again
    const stream = openai.responses.stream({ model, input, instructions: task.system, tools, ...previous });
    for await (const event of stream) {
      if (event.type === "response.output_text.delta") {
        turn.text += event.delta;
        turn.deltas += 1;
      }
      if (TERMINAL.includes(event.type)) turn.finish = event.response.status; // finalResponse wants completed
      if (scenario === "abort" && event.type.endsWith(".delta")) {
        turn.aborted = true;
        stream.abort();
        return null;
      }
    }
    const response = await stream.finalResponse();
    turn.finish = response.status;
    const calls = response.output.filter((item) => item.type === "function_call");
    turn.calls = calls.map((c) => ({ id: c.call_id, name: c.name, arguments: args(c.arguments) }));
    const usage = response.usage;
    turn.usage = usage ? { input: usage.input_tokens, output: usage.output_tokens } : null;
    return response;
  };
  const answer = (response) => {
    if (chained) {
      input.length = 0; // the server keeps the conversation: send only what is new
      previous.previous_response_id = response.id;
    } else {
      input.push(...response.output);
    }
    for (const item of response.output.filter((i) => i.type === "function_call")) {
      input.push({ type: "function_call_output", call_id: item.call_id, output: read(item.arguments) });
    }
  };
  return converse(scenario, ask, answer);
}

await main(PAIRS, runCell);
