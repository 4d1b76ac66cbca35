// The official openai JavaScript SDK: its streaming helpers client.chat.completions.stream (which
// assembles the completion) and client.responses.stream (which assembles the response). The
// second turn sends the assistant message and tool messages back (Chat Completions), or the
// output items and function_call_output items (Responses), as the SDK's own examples do.
import OpenAI from "openai";
import { CHAT, RESPONSES, args, connection, errorText, main, newTurn, read, task, wantsSecondTurn } from "./common.mjs";

const PAIRS = [
  ["openai-js", CHAT],
  ["openai-js", RESPONSES],
];
const FUNCTION = { name: "read", description: task.read_description, parameters: task.read_parameters };
const TERMINAL = ["response.completed", "response.incomplete", "response.failed"];

async function runCell(client, dialect, scenario) {
  const { baseURL, model } = connection(client, dialect, scenario);
  const openai = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0, timeout: task.timeout_ms });
  return dialect === CHAT ? chat(openai, model, scenario) : responses(openai, model, scenario);
}

async function chat(openai, model, scenario) {
  const messages = [
    { role: "system", content: task.system },
    { role: "user", content: task.prompts[scenario] },
  ];
  const turns = [];
  for (let number = 0; number < 2; number++) {
    const turn = newTurn();
    turns.push(turn);
    let message = null;
    try {
      const stream = openai.chat.completions.stream({
        model,
        messages,
        tools: [{ type: "function", function: FUNCTION }],
        stream_options: { include_usage: true },
      });
      for await (const chunk of stream) {
        const delta = chunk.choices[0]?.delta;
        if (delta?.content) {
          turn.text += delta.content;
          turn.deltas += 1;
        }
        if (scenario === "abort" && (delta?.content || delta?.tool_calls)) {
          turn.aborted = true;
          stream.abort();
          break;
        }
      }
      if (!turn.aborted) {
        const completion = await stream.finalChatCompletion();
        message = completion.choices[0].message;
        turn.finish = completion.choices[0].finish_reason;
        turn.calls = (message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: args(c.function.arguments) }));
        const usage = completion.usage;
        turn.usage = usage ? { input: usage.prompt_tokens, output: usage.completion_tokens } : null;
      }
    } catch (err) {
      turn.error = errorText(err);
    }
    if (message === null || !wantsSecondTurn(turn, scenario)) break;
    messages.push(message);
    for (const call of message.tool_calls) {
      messages.push({ role: "tool", tool_call_id: call.id, content: read(call.function.arguments) });
    }
  }
  return { turns };
}

async function responses(openai, model, scenario) {
  const input = [{ role: "user", content: task.prompts[scenario] }];
  const turns = [];
  for (let number = 0; number < 2; number++) {
    const turn = newTurn();
    turns.push(turn);
    let response = null;
    try {
      const stream = openai.responses.stream({ model, input, instructions: task.system, tools: [{ type: "function", ...FUNCTION }] });
      for await (const event of stream) {
        if (event.type === "response.output_text.delta") {
          turn.text += event.delta;
          turn.deltas += 1;
        }
        if (TERMINAL.includes(event.type)) turn.finish = event.response.status; // finalResponse wants completed
        if (scenario === "abort" && event.type.endsWith(".delta")) {
          turn.aborted = true;
          stream.abort();
          break;
        }
      }
      if (!turn.aborted) {
        response = await stream.finalResponse();
        turn.finish = response.status;
        const calls = response.output.filter((item) => item.type === "function_call");
        turn.calls = calls.map((c) => ({ id: c.call_id, name: c.name, arguments: args(c.arguments) }));
        const usage = response.usage;
        turn.usage = usage ? { input: usage.input_tokens, output: usage.output_tokens } : null;
      }
    } catch (err) {
      turn.error = errorText(err);
    }
    if (response === null || !wantsSecondTurn(turn, scenario)) break;
    input.push(...response.output);
    for (const item of response.output.filter((i) => i.type === "function_call")) {
      input.push({ type: "function_call_output", call_id: item.call_id, output: read(item.arguments) });
    }
  }
  return { turns };
}

await main(PAIRS, runCell);
