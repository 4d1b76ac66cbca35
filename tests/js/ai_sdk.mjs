// The Vercel AI SDK: streamText with a read tool, on @ai-sdk/openai-compatible (Chat Completions),
// @ai-sdk/openai (.chat and .responses) and @ai-sdk/anthropic (Messages).
// The SDK runs the tool and sends its result back itself (its multi-step loop, stopped after two
// steps): each step is a turn, read off fullStream's parts between start-step and finish-step.
// With its default settings (store on) the Responses provider sends the earlier output by
// item_reference; chained, prepareStep continues the first step by previousResponseId instead.
import { jsonSchema, stepCountIs, streamText, tool } from "ai";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { CHAT, MESSAGES, RESPONSES, args, connection, errorText, main, newTurn, read, task } from "./common.mjs";

const PAIRS = [
  ["ai-sdk/openai-compatible", CHAT],
  ["ai-sdk/openai", CHAT],
  ["ai-sdk/openai", RESPONSES],
  ["ai-sdk/anthropic", MESSAGES],
];

function languageModel(client, dialect, scenario) {
  const { baseURL, model } = connection(client, dialect, scenario);
  if (client === "ai-sdk/openai-compatible") {
    return createOpenAICompatible({ baseURL, name: "ink", apiKey: "unused", includeUsage: true })(model);
  }
  if (client === "ai-sdk/anthropic") return createAnthropic({ baseURL, apiKey: "unused" })(model);
  const openai = createOpenAI({ baseURL, apiKey: "unused" });
  return dialect === RESPONSES ? openai.responses(model) : openai.chat(model);
}

// Chained: the second step names the first step's response and sends only the tool results.
function continueByPreviousResponse({ stepNumber, steps }) {
  if (stepNumber === 0) return undefined;
  const previous = steps[stepNumber - 1];
  return {
    providerOptions: { openai: { previousResponseId: previous.providerMetadata?.openai?.responseId } },
    messages: previous.response.messages.filter((message) => message.role === "tool"),
  };
}

async function runCell(client, dialect, scenario, chained) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error("timed out")), 4 * task.timeout_ms);
  const turns = [];
  let turn = null;
  try {
    const result = streamText({
      model: languageModel(client, dialect, scenario),
      system: task.system,
      prompt: task.prompts[scenario],
      tools: {
        read: tool({
          description: task.read_description,
          inputSchema: jsonSchema(task.read_parameters),
          execute: async (input) => {
            turn.ran.push(input); // what the SDK ran the tool with, in this step
            return read(input);
          },
        }),
      },
      stopWhen: stepCountIs(2),
      maxRetries: 0,
      maxOutputTokens: 1024,
      abortSignal: controller.signal,
      onError: () => {}, // errors arrive as fullStream parts too: reported there, not printed
      prepareStep: chained ? continueByPreviousResponse : undefined,
    });
    for await (const part of result.fullStream) {
      if (part.type === "start-step") turns.push((turn = { ...newTurn(), ran: [] }));
      else if (part.type === "text-delta") {
        turn.text += part.text;
        turn.deltas += 1;
      } else if (part.type === "tool-call") {
        turn.calls.push({ id: part.toolCallId, name: part.toolName, arguments: args(part.input), invalid: part.invalid ?? false });
      } else if (part.type === "tool-error") {
        turn.tool_errors = [...(turn.tool_errors ?? []), errorText(part.error)];
      } else if (part.type === "finish-step") {
        turn.finish = part.finishReason;
        turn.usage = { input: part.usage.inputTokens ?? null, output: part.usage.outputTokens ?? null };
      } else if (part.type === "error") {
        (turn ?? turns[turns.push(newTurn()) - 1]).error = errorText(part.error);
      } else if (part.type === "abort") {
        if (turn) turn.aborted_by_sdk = true;
      }
      if (scenario === "abort" && turn && !turn.aborted && ["text-delta", "tool-input-start", "tool-input-delta"].includes(part.type)) {
        turn.aborted = true;
        controller.abort();
      }
    }
  } catch (err) {
    (turn ?? turns[turns.push(newTurn()) - 1]).error = errorText(err);
  } finally {
    clearTimeout(timer);
  }
  return { turns };
}

await main(PAIRS, runCell);
