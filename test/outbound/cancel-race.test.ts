// Cancel against the dispatcher, with each interleaving forced instead of hoped for (a free-running
// race came out "cancel wins" 50 times in 50, so the 409 branch never ran). The interface: a
// scheduled or queued message not yet advanced by the dispatcher is canceled; one the dispatcher
// advanced, even while the cancel was in flight, is left as it is and the cancel fails with 409
// carrying the freshly observed status. The dispatcher is stopped and driven by tick(); the seams:
//   - a hold check (the dispatcher's own extension point) parks a claimed message before its
//     dispatch commit;
//   - the capture transport's hold() parks a message after its dispatch commit;
//   - the ledger's `beforeUpdateWrite` seam parks a cancel between its read and its
//     compare-and-swap write.
import t from 'tap';
import type { MessageRow } from '../../src/messages/message.js';
import { createCaptureTransport, type CaptureTransport } from '../helpers/capture-transport.js';
import { bootDaemon, type TestDaemon } from '../helpers/daemon.js';
import { testDatabases } from '../helpers/databases.js';

const email = (to: string) => ({ to, channel: 'email', content: { subject: 'Hi', text: 'Hello' } });

/** A promise to park a step on, and the function that lets it go. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

for (const db of testDatabases()) {
  t.test(`cancel against the dispatcher on ${db}`, async (t) => {
    const d: TestDaemon = await bootDaemon(t, { db });
    const ws = await d.workspace('acme', { plan: 'pro' });
    const w = d.app.workers.find((x) => x.name === 'dispatcher')!;
    await w.stop(); // no automatic passes: each test drives the dispatcher with tick()
    let cap!: CaptureTransport;
    t.beforeEach(() => {
      cap = createCaptureTransport();
      d.app.outbound.registerTransport('email', cap);
    });
    const send = async (to: string): Promise<string> => {
      const r = await d.request('POST', '/v1/send', { key: ws.live, body: email(to) });
      if (r.status !== 202) throw new Error(`send failed: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.id as string;
    };
    const cancel = (id: string) => d.request('DELETE', `/v1/messages/${id}`, { key: ws.live });
    const message = async (id: string) => (await d.request('GET', `/v1/messages/${id}`, { key: ws.live })).body;
    const entries = (m: { timeline: { e: string }[] }) => m.timeline.map((e) => e.e);

    t.test('a cancel that wins: the dispatcher claimed the message but had not dispatched it', async (t) => {
      const id = await send('claimed@example.com');
      const parked = gate();
      const reached = gate();
      d.app.outbound.addHoldCheck(async (m) => {
        if (m.publicId === id) {
          reached.open();
          await parked.wait;
        }
        return null;
      });
      const pass = w.tick();
      await reached.wait; // claimed (leased), rendered in memory, before the dispatch commit
      const c = await cancel(id);
      t.equal(c.status, 200);
      t.same(c.body, { id, status: 'canceled' });
      parked.open();
      await pass;
      await w.tick();
      t.equal(cap.deliveries.length, 0, 'nothing was handed to the transport');
      const m = await message(id);
      t.equal(m.status, 'canceled');
      t.same(entries(m), ['accepted', 'canceled'], 'the dispatcher wrote nothing after the cancel');
    });

    t.test('a cancel that loses: the dispatcher already dispatched the message', async (t) => {
      const id = await send('dispatched@example.com');
      cap.hold();
      const pass = w.tick();
      await cap.waitFor(1); // dispatched is committed before the hand-over
      const c = await cancel(id);
      t.equal(c.status, 409);
      t.match(c.body.error, { code: 'not_cancelable', status: 'dispatched' });
      t.equal((await message(id)).status, 'dispatched', 'not marked canceled');
      cap.release();
      await pass;
      const m = await message(id);
      t.equal(m.status, 'delivered');
      t.notOk(entries(m).includes('canceled'));
    });

    t.test('the dispatcher moves the message between the cancel read and its write', async (t) => {
      const id = await send('between@example.com');
      const parked = gate();
      const reached = gate();
      let seen: MessageRow | null = null;
      d.app.ledger.seams.beforeUpdateWrite = async (row) => {
        if (row.public_id !== id || seen) return;
        seen = row;
        reached.open();
        await parked.wait;
      };
      t.teardown(() => void (d.app.ledger.seams.beforeUpdateWrite = null));
      cap.hold();
      const answer = cancel(id);
      await reached.wait;
      t.equal(seen!.status, 'queued', 'the cancel read the message as cancelable and decided to cancel it');
      const pass = w.tick();
      if (db === 'postgres') {
        // Concurrent writers: the dispatcher claims, renders and commits `dispatched` while the
        // cancel's transaction is open, and hands the message over.
        await cap.waitFor(1);
        parked.open();
        const c = await answer;
        t.equal(c.status, 409, 'the compare-and-swap found the row moved on');
        t.match(c.body.error, { code: 'not_cancelable', status: 'dispatched' }, 'the status observed afresh');
        t.equal((await message(id)).status, 'dispatched', 'not overwritten with canceled');
        cap.release();
        await pass;
        const m = await message(id);
        t.equal(m.status, 'delivered');
        t.notOk(entries(m).includes('canceled'));
      } else {
        // SQLite has one writer: the dispatcher's claim, already submitted, waits for the cancel's
        // transaction, so here the cancel wins and the dispatcher finds nothing due.
        parked.open();
        const c = await answer;
        t.equal(c.status, 200);
        t.same(c.body, { id, status: 'canceled' });
        cap.release();
        await pass;
        t.equal(cap.deliveries.length, 0, 'nothing was handed to the transport');
        const m = await message(id);
        t.equal(m.status, 'canceled');
        t.same(entries(m), ['accepted', 'canceled']);
      }
    });
  });
}
