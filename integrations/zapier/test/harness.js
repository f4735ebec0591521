'use strict';

// What the app's tests run against: the real `timetrack serve` on a private PostgreSQL cluster
// of its own, and a local HTTPS receiver standing in for Zapier's hook URLs (its certificate
// signed by a CA made for the run, which the server is told to trust).

const { spawn, execFileSync } = require('child_process');
const fs = require('fs');
const https = require('https');
const os = require('os');
const path = require('path');
const readline = require('readline');

const REPO = path.resolve(__dirname, '..', '..', '..');

/** The `timetrack` binary: `TIMETRACK_BIN`, else the workspace's debug build. */
const binary = () => {
  const bin = process.env.TIMETRACK_BIN || path.join(REPO, 'target', 'debug', 'timetrack');
  if (!fs.existsSync(bin)) {
    throw new Error(
      `${bin} is missing: build it with \`cargo build -p timetrack-api\` (or set TIMETRACK_BIN)`,
    );
  }
  return bin;
};

/** A CA and a certificate for 127.0.0.1 signed by it, made with openssl under `dir`. */
const makeCertificates = (dir) => {
  const file = (name) => path.join(dir, name);
  const openssl = (...args) => execFileSync('openssl', args, { stdio: 'pipe' });
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2',
    '-subj', '/CN=timetrack zapier test CA', '-keyout', file('ca.key'), '-out', file('ca.pem'));
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1',
    '-keyout', file('hook.key'), '-out', file('hook.csr'));
  fs.writeFileSync(file('hook.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl('x509', '-req', '-in', file('hook.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'),
    '-CAcreateserial', '-days', '2', '-extfile', file('hook.ext'), '-out', file('hook.pem'));
  return { ca: file('ca.pem'), cert: file('hook.pem'), key: file('hook.key') };
};

/**
 * An HTTPS server recording every request (path, lower-cased headers, body as text); it answers
 * 200 unless told another status for a path.
 */
const startReceiver = async (certs) => {
  const received = [];
  const statuses = new Map();
  const server = https.createServer(
    { cert: fs.readFileSync(certs.cert), key: fs.readFileSync(certs.key) },
    (req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const url = new URL(req.url, 'https://127.0.0.1');
        received.push({ path: url.pathname, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(statuses.get(url.pathname) || 200, { 'content-type': 'text/plain' });
        res.end('ok');
      });
    },
  );
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: (p) => `https://127.0.0.1:${port}${p}`,
    respond: (p, status) => statuses.set(p, status),
    received: () => received.slice(),
    /** The requests to `p` once `count` have arrived, or an error after `seconds`. */
    waitFor: async (p, count, seconds = 30) => {
      const deadline = Date.now() + seconds * 1000;
      for (;;) {
        const got = received.filter((r) => r.path === p);
        if (got.length >= count) {
          return got;
        }
        if (Date.now() > deadline) {
          throw new Error(`${p} received ${got.length} of ${count} requests in ${seconds} s`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    close: () => new Promise((resolve) => server.close(resolve)),
  };
};

/**
 * `timetrack serve` on a free port and a private cluster under `dataDir` (no DATABASE_URL), with
 * `env` added; resolves with its base URL and the demo key its banner prints.
 */
const startServer = (dataDir, env) =>
  new Promise((resolve, reject) => {
    const childEnv = { ...process.env, ...env };
    delete childEnv.DATABASE_URL;
    const child = spawn(
      binary(),
      ['serve', '--bind', '127.0.0.1:0', '--metrics-bind', 'off', '--data-dir', dataDir],
      { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const log = [];
    child.stderr.on('data', (d) => log.push(d.toString()));
    let base;
    const lines = readline.createInterface({ input: child.stdout });
    lines.on('line', (line) => {
      const listening = line.match(/listening on (http:\/\/[^ ]+)/);
      if (listening) {
        base = listening[1];
      }
      const key = line.match(/Demo API key .*: (tt_\S+)/);
      if (key && base) {
        resolve({
          base,
          key: key[1],
          log: () => log.join(''),
          stop: () =>
            new Promise((done) => {
              if (child.exitCode !== null) {
                done();
                return;
              }
              child.once('exit', () => done());
              child.kill('SIGTERM');
            }),
        });
      }
    });
    child.once('exit', (code) => {
      if (!base) {
        reject(new Error(`timetrack serve exited with ${code} before listening:\n${log.join('')}`));
      }
    });
  });

/** A new temporary directory. */
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'timetrack-zapier-'));
  // The private cluster may run as another user (PostgreSQL refuses root): it must get in.
  fs.chmodSync(dir, 0o755);
  return dir;
};

module.exports = { makeCertificates, startReceiver, startServer, tempDir };
