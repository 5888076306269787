// A load run against `anelm serve`: streamed chat requests from N concurrent
// clients, time to first token (p50/p99) and aggregate tokens per second; then
// a two-turn chat on a long history, to time how much the prompt cache saves.
// Node.js 18+ and no packages:
//   node bench/serve_load.mjs --url http://127.0.0.1:8080 [--concurrency 1,4,8]
//     [--requests 200] [--max-tokens 64] [--history-words 430] [--pid PID]
import fs from 'node:fs';

const args = Object.fromEntries(process.argv.slice(2).reduce((pairs, a, i, all) => {
  if (a.startsWith('--')) pairs.push([a.slice(2), all[i + 1]]);
  return pairs;
}, []));
const url = args.url ?? 'http://127.0.0.1:8080';
const concurrency = (args.concurrency ?? '1,4,8').split(',').map(Number);
const requests = Number(args.requests ?? 200);
const maxTokens = Number(args['max-tokens'] ?? 64);
const historyWords = Number(args['history-words'] ?? 430);

const words = 'the quick brown fox jumps over a lazy dog while seven small birds sing about rivers'.split(' ');
const text = (n, seed) => Array.from({ length: n }, (_, i) => words[(i * 7 + seed) % words.length]).join(' ');

// One streamed chat request: time to the first content token, tokens, seconds.
async function chat(messages, max_tokens) {
  const start = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      messages, max_tokens, temperature: 0, stream: true, stream_options: { include_usage: true },
    }),
  });
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${await res.text()}`);
  const decoder = new TextDecoder();
  let buffered = '', first = null, usage = null, reply = '';
  for await (const bytes of res.body) {
    buffered += decoder.decode(bytes, { stream: true });
    let end;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
      const chunk = JSON.parse(event.slice(6));
      if (chunk.error) throw new Error(chunk.error.message);
      if (chunk.usage) usage = chunk.usage;
      const delta = chunk.choices[0]?.delta?.content;
      if (delta) {
        first ??= performance.now();
        reply += delta;
      }
    }
  }
  const end = performance.now();
  return { ttft: ((first ?? end) - start) / 1000, seconds: (end - start) / 1000, usage, reply };
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

function rssMiB(pid) {
  if (!pid) return null;
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024;
  } catch {
    return null;
  }
}

// The server's step counters (GET /metrics), or null where it has none.
async function metrics() {
  try {
    const res = await fetch(`${url}/metrics`);
    if (res.status !== 200) return null;
    const text = await res.text();
    const value = (name) => Number(new RegExp(`^anelm:${name} (\\S+)$`, 'm').exec(text)[1]);
    return { decodeTokens: value('decode_tokens_total'), decodeSeconds: value('decode_seconds_total'),
      promptSeconds: value('prompt_seconds_total') };
  } catch {
    return null;
  }
}

async function loadRun(clients) {
  let next = 0, errors = 0, tokens = 0;
  const ttfts = [];
  const counters = await metrics();
  const start = performance.now();
  await Promise.all(Array.from({ length: clients }, async () => {
    while (next < requests) {
      const i = next++;
      try {
        const r = await chat([{ role: 'user', content: `Request ${i}: ${text(12, i)}` }], maxTokens);
        ttfts.push(r.ttft);
        tokens += r.usage?.completion_tokens ?? 0;
      } catch (e) {
        errors++;
        console.error(`request ${i}: ${e.message}`);
      }
    }
  }));
  const seconds = (performance.now() - start) / 1000;
  ttfts.sort((a, b) => a - b);
  // Decoding alone: the steps that carried no prompt tokens.
  const end = counters && await metrics();
  const decodeSeconds = end ? end.decodeSeconds - counters.decodeSeconds : 0;
  const promptSeconds = end ? end.promptSeconds - counters.promptSeconds : 0;
  return { clients, seconds, tokens, errors, rate: tokens / seconds,
    decodeRate: decodeSeconds > 0 ? (end.decodeTokens - counters.decodeTokens) / decodeSeconds : null,
    promptShare: end ? promptSeconds / (promptSeconds + decodeSeconds) : null,
    p50: quantile(ttfts, 0.5), p99: quantile(ttfts, 0.99) };
}

const pid = args.pid ? Number(args.pid) : null;

const before = rssMiB(pid);
const runs = [];
for (const c of concurrency) {
  const r = await loadRun(c);
  runs.push(r);
  console.log(`${String(c).padStart(2)} streams: ${requests} requests, ${r.errors} errors, ` +
    `${r.tokens} tokens in ${r.seconds.toFixed(1)} s = ${r.rate.toFixed(1)} tok/s aggregate; ` +
    `time to first token p50 ${(r.p50 * 1000).toFixed(0)} ms, p99 ${(r.p99 * 1000).toFixed(0)} ms` +
    (r.decodeRate === null ? '' : `; decoding alone ${r.decodeRate.toFixed(1)} tok/s, ` +
      `prompt steps ${(r.promptShare * 100).toFixed(0)}% of the step time`));
}
const one = runs.find((r) => r.clients === 1);
for (const r of runs) {
  if (!one || r.clients === 1) continue;
  console.log(`${r.clients} streams: ${(r.rate / one.rate).toFixed(2)}x one stream's rate end to end` +
    (r.decodeRate === null ? '' : `, ${(r.decodeRate / one.decodeRate).toFixed(2)}x decoding alone`));
}

const history = [{ role: 'user', content: `Please remember this: ${text(historyWords, 3)}` }];
const turn1 = await chat(history, 4);  // a short answer: the random test weights write no real words
history.push({ role: 'assistant', content: turn1.reply }, { role: 'user', content: 'And then?' });
const turn2 = await chat(history, 16);
console.log(`chat on a ${turn1.usage.prompt_tokens}-token history: first turn's time to first token ` +
  `${(turn1.ttft * 1000).toFixed(0)} ms, second turn's ${(turn2.ttft * 1000).toFixed(0)} ms ` +
  `(${turn2.usage.prompt_tokens_details?.cached_tokens} of ${turn2.usage.prompt_tokens} prompt tokens cached): ` +
  `${(turn1.ttft / turn2.ttft).toFixed(1)}x shorter`);
const after = rssMiB(pid);
if (before !== null && after !== null)
  console.log(`server memory: ${before.toFixed(0)} MiB before the load, ${after.toFixed(0)} MiB after`);
const errors = runs.reduce((n, r) => n + r.errors, 0);
process.exit(errors > 0 ? 1 : 0);
