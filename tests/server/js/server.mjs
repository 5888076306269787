// Starts `anelm serve` on a free loopback port for one test file and stops it,
// or runs one that should end by itself. ANELM_BIN is the program,
// ANELM_TEST_MODEL the model folder it serves.
import { spawn } from 'node:child_process';
import net from 'node:net';

export function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

async function waitReady(url, child, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`anelm serve exited with ${child.exitCode}`);
    try {
      const r = await fetch(`${url}/health`);
      if (r.status === 200) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`anelm serve did not become ready within ${timeoutMs} ms`);
}

// Returns { url, pid, stderr(), stop() }; extraArgs are appended to the command line.
export async function startServer(extraArgs = []) {
  const port = await freePort();
  const args = ['serve', process.env.ANELM_TEST_MODEL, '--host', '127.0.0.1', '--port', String(port),
    ...extraArgs];
  const child = spawn(process.env.ANELM_BIN, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr.on('data', (d) => { log += d; });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitReady(url, child, 60000);
  } catch (e) {
    child.kill('SIGKILL');
    throw new Error(`${e.message}\n${log}`);
  }
  return {
    url,
    pid: child.pid,
    stderr: () => log,
    stop: () => new Promise((resolve) => {
      if (child.exitCode !== null) return resolve(child.exitCode);
      child.once('exit', (code) => resolve(code));
      child.kill('SIGTERM');
    }),
  };
}

// Runs `anelm ARGS`, which should end by itself; resolves with { code, stderr },
// code null when it was still running after `ms` and had to be killed.
export function runAnelm(args, ms = 10000) {
  return new Promise((resolve) => {
    const child = spawn(process.env.ANELM_BIN, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}
