// A tiny express app behind express-idempotency, mounted as its README
// shows (app.post('*', idempotency(...)), the route checks isHit), for
// conform (loadtest/conform/testdata/peers/express, make conform-peers).
//
// POST /things waits 20 ms and answers 201 with a new id and a Location;
// GET /things answers []. ADAPTER=redis stores keys in Redis (REDIS_URL)
// through express-idempotency-redis-adapter, otherwise in the middleware's
// memory. It prints "listening <port>" once it accepts requests on
// 127.0.0.1 (PORT, default 0: any free port) and exits on SIGTERM.
'use strict';

const express = require('express');
const { idempotency, getSharedIdempotencyService } = require('express-idempotency');
const RedisAdapter = require('express-idempotency-redis-adapter').default;

async function main() {
  const options = {};
  let adapter;
  if (process.env.ADAPTER === 'redis') {
    if (!process.env.REDIS_URL) throw new Error('ADAPTER=redis needs REDIS_URL');
    adapter = new RedisAdapter({ connectionConfig: { url: process.env.REDIS_URL } });
    await adapter.connect();
    options.dataAdapter = withLatency(adapter, Number(process.env.REDIS_LATENCY_MS || 0));
  }
  const app = express();
  app.use(express.json());
  app.post('*', idempotency(options));
  let n = 0;
  app.post('/things', (req, res) => {
    if (getSharedIdempotencyService().isHit(req)) return; // the middleware answered
    setTimeout(() => {
      n += 1;
      res.location(`/things/${n}`).status(201).json({ id: n, body: req.body });
    }, 20);
  });
  app.get('/things', (req, res) => res.json([]));
  const server = app.listen(Number(process.env.PORT || 0), '127.0.0.1', () => {
    console.log(`listening ${server.address().port}`);
  });
  process.on('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    if (adapter) adapter.disconnect().catch(() => {});
  });
}

// withLatency returns adapter with every call ms later, as if Redis were
// across a network rather than on the loopback.
function withLatency(adapter, ms) {
  if (!ms) return adapter;
  const later = (fn) => (...args) => new Promise((r) => setTimeout(r, ms)).then(() => fn.apply(adapter, args));
  return {
    findByIdempotencyKey: later(adapter.findByIdempotencyKey),
    create: later(adapter.create),
    update: later(adapter.update),
    delete: later(adapter.delete),
  };
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
