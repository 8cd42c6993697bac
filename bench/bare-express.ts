// A bare Express 5 handler answering the same JSON as GET /v1/context: the baseline figure.
import express from 'express';

const app = express();
app.disable('x-powered-by');
app.get('/v1/context', (_req, res) => {
  res.json({ workspace: { id: '0192b0a0-0000-7000-8000-000000000000', slug: 'bench', name: 'Bench' }, mode: 'live' });
});
app.post('/v1/send', express.json(), (_req, res) => {
  res.status(202).json({ id: 'msg_0000000000000000000000', status: 'queued', livemode: true });
});
const server = app.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ msg: 'ready', port: (server.address() as { port: number }).port }));
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
