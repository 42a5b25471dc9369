#!/usr/bin/env node
// Starts the telegram-test-api emulator (the version pinned in package.json) for the Telegram
// adapter's tests, on 127.0.0.1 only, on a free port, with two fixes for python-telegram-bot 22:
//
//   * getMe: the emulator's bot user lacks `is_bot`, which python-telegram-bot requires;
//   * sendMessage: the emulator returns the message `date` in milliseconds; the Bot API (and
//     python-telegram-bot, which turns it into a datetime) uses seconds.
//
// Both are applied to the emulator's JSON answers and nothing else is changed. The emulator's
// own `start()` is not used: it cannot listen on port 0 and would expire messages after a
// minute. Its express app (a property the 4.2.1 release exposes to JavaScript) is served by an
// HTTP server of ours instead.
//
// Prints one JSON line when listening: {"port": N, "host": "127.0.0.1"}. Stops on SIGTERM, on
// SIGINT, and when its standard input closes (so it never outlives the test run that owns it).
'use strict';

const http = require('http');
const TelegramServer = require('telegram-test-api');

const HOST = '127.0.0.1';

const FIXES = {
  getMe: (body) => (body && body.ok ? { ...body, result: { is_bot: true, ...body.result } } : body),
  sendMessage: (body) => (body && body.ok && typeof body.result.date === 'number'
    ? { ...body, result: { ...body.result, date: Math.floor(body.result.date / 1000) } }
    : body),
};

// Buffer a response and pass its JSON through `fix` before it is sent.
function rewriteJson(res, fix) {
  const chunks = [];
  const end = res.end.bind(res);
  res.write = (chunk, encoding) => {
    chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, encoding));
    return true;
  };
  res.end = (chunk, encoding, callback) => {
    if (chunk && typeof chunk !== 'function') {
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, encoding));
    }
    let body = Buffer.concat(chunks);
    try {
      body = Buffer.from(JSON.stringify(fix(JSON.parse(body.toString('utf8')))));
    } catch (error) {
      // not JSON: sent unchanged
    }
    if (!res.headersSent) {
      res.setHeader('Content-Length', body.length);
    }
    return end(body, typeof callback === 'function' ? callback : undefined);
  };
}

const emulator = new TelegramServer({ host: HOST, port: 1, storeTimeout: 3600 });

const server = http.createServer((req, res) => {
  const method = /^\/bot[^/]+\/([A-Za-z]+)/.exec(req.url || '');
  if (method && FIXES[method[1]]) {
    rewriteJson(res, FIXES[method[1]]);
  }
  emulator.webServer(req, res);
});

let stopping = false;
function stop() {
  if (stopping) {
    return;
  }
  stopping = true;
  server.close(() => process.exit(0));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 2000).unref();
}

process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();

server.listen(0, HOST, () => {
  const { port } = server.address();
  process.stdout.write(`${JSON.stringify({ host: HOST, port })}\n`);
});
