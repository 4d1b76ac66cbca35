// What the Node drivers share (the Python side's tests/clients/common.py, in JavaScript): the task
// they get as JSON on the command line (prompts, files, connections: one source, in Python), the
// read tool, what each Responses request sent (fetch, tapped), and how a cell is reported — one
// line `CELL {json}` each, as the Python drivers print.
// Usage: node tests/js/<client>.mjs TASK_JSON [dialect/scenario[+chained] ...]

export const task = JSON.parse(process.argv[2]);
const only = new Set(process.argv.slice(3));

export const CHAT = "openai-completions";
export const MESSAGES = "anthropic-messages";
export const RESPONSES = "openai-responses";

/** What a Responses request sent: whether it named a previous response, and its input items' types. */
export function sent(body) {
  const items = typeof body?.input === "string" ? [{ role: "user" }] : Array.isArray(body?.input) ? body.input : [];
  const types = items.map((item) => (item && typeof item === "object" ? String(item.type ?? "message") : "?"));
  return { previous_response_id: typeof body?.previous_response_id === "string", input: types };
}

// Every POST …/responses the clients make, noted in order (they all fetch through globalThis.fetch).
const SENT = [];
const fetchAsGiven = globalThis.fetch;
globalThis.fetch = (resource, init) => {
  const where = String(resource instanceof Request ? resource.url : resource);
  if ((init?.method ?? "GET").toUpperCase() === "POST" && new URL(where).pathname.endsWith("/responses")) {
    try {
      SENT.push(sent(JSON.parse(init.body)));
    } catch {
      SENT.push({ previous_response_id: false, input: ["?"] }); // a body not JSON text: say so, in order
    }
  }
  return fetchAsGiven(resource, init);
};

/** The base URL and model name a client takes for a dialect, with this scenario's server root. */
export function connection(client, dialect, scenario) {
  const [url, model] = task.connections[`${client} ${dialect}`];
  return { baseURL: url.replace("{root}", task.roots[scenario]), model };
}

/** The read tool: a file's text for {path}, the loop's retry error for anything else. */
export function read(input) {
  let value = input;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      return task.retry_error;
    }
  }
  const path = value && typeof value === "object" ? value.path : undefined;
  if (typeof path !== "string") return task.retry_error;
  return task.files[path] ?? `Error: '${path}': no such file`;
}

/** A call's arguments as the client gave them: the object, or {raw: text} when they do not parse. */
export function args(value) {
  if (typeof value !== "string") return value ?? null;
  try {
    const parsed = JSON.parse(value);
    return parsed && typeof parsed === "object" && !Array.isArray(parsed) ? parsed : { raw: value };
  } catch {
    return { raw: value };
  }
}

export function newTurn() {
  return { text: "", deltas: 0, calls: [], finish: null, usage: null, error: null };
}

export function errorText(err) {
  return `${err?.name ?? "Error"}: ${err?.message ?? err}`.slice(0, 300);
}

/** A second turn where the first handed over calls without an error, but not after length-tool (§4.4). */
export function wantsSecondTurn(turn, scenario) {
  return turn.calls.length > 0 && turn.error === null && scenario !== "length-tool";
}

/**
 * Up to two turns, the way a caller loops by hand: ask(turn) streams one request, fills the turn and
 * returns the reply the client assembled (null: none); answer(reply) sends the tool results back the
 * client's own way before the second.
 */
export async function converse(scenario, ask, answer) {
  const turns = [];
  for (let number = 0; number < 2; number++) {
    const turn = newTurn();
    turns.push(turn);
    let reply = null;
    try {
      reply = await ask(turn);
    } catch (err) {
      turn.error = errorText(err);
    }
    if (reply === null || !wantsSecondTurn(turn, scenario)) break;
    answer(reply);
  }
  return { turns };
}

/**
 * Run every cell of the driver's [client, dialect] pairs — a Responses pair's chained scenarios a second
 * time, chained — runCell(client, dialect, scenario, chained) → {turns, ...}; a driver's own failure is the cell's.
 */
export async function main(pairs, runCell) {
  for (const [client, dialect] of pairs) {
    const chained = dialect === RESPONSES ? task.chained.map((scenario) => [scenario, true]) : [];
    for (const [scenario, chain] of [...task.scenarios.map((scenario) => [scenario, false]), ...chained]) {
      if (only.size && !only.has(`${dialect}/${scenario}${chain ? "+chained" : ""}`)) continue;
      const cell = { client, dialect, scenario, chained: chain };
      SENT.length = 0;
      try {
        Object.assign(cell, await runCell(client, dialect, scenario, chain));
      } catch (err) {
        Object.assign(cell, { turns: [], driver_error: errorText(err), trace: String(err?.stack).slice(-2000) });
      }
      if (dialect === RESPONSES) cell.turns.forEach((turn, number) => (turn.sent = SENT[number]));
      process.stdout.write(`CELL ${JSON.stringify(cell)}\n`);
    }
  }
}
