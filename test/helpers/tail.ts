// A live tail (GET /v1/messages?tail=1, server-sent events) read as a client would: each event
// parsed as it arrives.
import http from 'node:http';

export interface SseEvent {
  event?: string;
  id?: string;
  data?: any;
  comment?: string;
  /** When it arrived (ms since the epoch). */
  at?: number;
}

/** Opens a tail and yields parsed events as they arrive. */
export function openTail(url: string, key: string) {
  const events: SseEvent[] = [];
  const waiters: Array<() => void> = [];
  let ended = false;
  let res: http.IncomingMessage | null = null;
  const req = http.get(url, { headers: { authorization: `Bearer ${key}` } }, (r) => {
    res = r;
    let buf = '';
    r.setEncoding('utf8');
    r.on('data', (chunk: string) => {
      buf += chunk;
      let i;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const ev: SseEvent = { at: Date.now() };
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) ev.comment = line.slice(1).trim();
          else if (line.startsWith('event: ')) ev.event = line.slice(7);
          else if (line.startsWith('id: ')) ev.id = line.slice(4);
          else if (line.startsWith('data: ')) ev.data = JSON.parse(line.slice(6));
        }
        events.push(ev);
        waiters.splice(0).forEach((w) => w());
      }
    });
    r.on('end', () => {
      ended = true;
      waiters.splice(0).forEach((w) => w());
    });
  });
  return {
    events,
    get status() {
      return res?.statusCode;
    },
    get contentType() {
      return res?.headers['content-type'];
    },
    get ended() {
      return ended;
    },
    async until(pred: () => boolean) {
      for (let i = 0; i < 1000 && !pred(); i++) {
        if (ended) break;
        await new Promise<void>((r) => waiters.push(r));
      }
      return pred();
    },
    close: () => req.destroy(),
  };
}
