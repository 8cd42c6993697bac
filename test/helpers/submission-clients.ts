// Real SMTP clients for the submission tests, none of them ours: swaks and msmtp (Debian), Python's
// smtplib (/usr/bin/python3) and nodemailer's SMTP transport. Each takes the same description of a
// submission and reports what the server answered, as the client saw it.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';

export interface Submitted {
  user: string;
  password: string;
  /** Envelope sender. */
  from: string;
  to: string[];
  raw: Buffer;
}

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end, feeding it `input`. */
function run(cmd: string, args: string[], input?: Buffer | string): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}

/** The bytes of a message as nodemailer's composer writes them (headers given are kept as written). */
export async function compose(mail: ConstructorParameters<typeof MailComposer>[0]): Promise<Buffer> {
  return new MailComposer(mail).compile().build();
}

const dir = mkdtempSync(path.join(tmpdir(), 'postern-submission-'));
let files = 0;
function file(content: Buffer | string): string {
  const p = path.join(dir, `m${++files}`);
  writeFileSync(p, content);
  return p;
}

/** swaks: `tls` is `starttls` (port 587's way) or `implicit` (465's); `auth` PLAIN or LOGIN, or none. */
export function swaks(
  port: number,
  s: Submitted,
  opts: { tls: 'starttls' | 'implicit' | 'none'; auth: 'PLAIN' | 'LOGIN' | null; extra?: string[] },
): Promise<Ran> {
  return run('swaks', [
    '--server',
    '127.0.0.1',
    '--port',
    String(port),
    ...(opts.tls === 'starttls' ? ['--tls'] : opts.tls === 'implicit' ? ['--tls-on-connect'] : []),
    ...(opts.auth ? ['--auth', opts.auth, '--auth-user', s.user, '--auth-password', s.password] : []),
    '--from',
    s.from,
    '--to',
    s.to.join(','),
    '--data',
    `@${file(s.raw)}`,
    '--timeout',
    '60',
    ...(opts.extra ?? []),
  ]);
}

/** msmtp, as cron and PHP's mail() call it (the message on stdin, recipients as arguments). */
export function msmtp(port: number, s: Submitted, opts: { tls: 'starttls' | 'implicit' }): Promise<Ran> {
  return run(
    'msmtp',
    [
      '--host=127.0.0.1',
      `--port=${port}`,
      '--tls=on',
      `--tls-starttls=${opts.tls === 'starttls' ? 'on' : 'off'}`,
      '--tls-certcheck=off',
      '--auth=plain',
      `--user=${s.user}`,
      `--passwordeval=printf %s ${s.password}`,
      `--from=${s.from}`,
      '--',
      ...s.to,
    ],
    s.raw,
  );
}

// Python's smtplib: STARTTLS or SMTP_SSL, login (smtplib picks the mechanism: PLAIN before LOGIN),
// then MAIL/RCPT/DATA one by one so every reply is reported.
const PYTHON = String.raw`
import json, smtplib, ssl, sys
a = json.load(sys.stdin)
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
out = {"rcpt": [], "mail": None, "data": None, "login": None}
try:
    if a["tls"] == "implicit":
        s = smtplib.SMTP_SSL("127.0.0.1", a["port"], context=ctx, timeout=60)
    else:
        s = smtplib.SMTP("127.0.0.1", a["port"], timeout=60)
    s.ehlo()
    if a["tls"] == "starttls":
        s.starttls(context=ctx)
        s.ehlo()
    try:
        if a.get("mechanism"):
            s.user, s.password = a["user"], a["password"]
            code, msg = s.auth(a["mechanism"], getattr(s, "auth_" + a["mechanism"].lower()))
        else:
            code, msg = s.login(a["user"], a["password"])
        out["login"] = [code, msg.decode()]
    except smtplib.SMTPException as e:
        out["login"] = [getattr(e, "smtp_code", -1), getattr(e, "smtp_error", str(e)).decode() if isinstance(getattr(e, "smtp_error", None), bytes) else str(e)]
        print(json.dumps(out)); sys.exit(0)
    raw = a["raw"].encode("latin1")
    opts = []
    if any(ord(c) > 127 for c in a["from"] + "".join(a["to"])):
        opts.append("SMTPUTF8")
    if a.get("declareSize"):
        opts.append("SIZE=%d" % len(raw))
    code, msg = s.mail(a["from"], opts)
    out["mail"] = [code, msg.decode()]
    if code == 250:
        for r in a["to"]:
            code, msg = s.rcpt(r)
            out["rcpt"].append([code, msg.decode()])
        if any(c == 250 for c, _ in out["rcpt"]):
            code, msg = s.data(raw)
            out["data"] = [code, msg.decode()]
    s.quit()
except smtplib.SMTPServerDisconnected as e:
    out["disconnected"] = str(e)
print(json.dumps(out))
`;

export interface SmtplibResult {
  login: [number, string] | null;
  mail: [number, string] | null;
  rcpt: [number, string][];
  data: [number, string] | null;
  disconnected?: string;
}

export async function smtplib(
  port: number,
  s: Submitted,
  opts: { tls: 'starttls' | 'implicit' | 'none'; mechanism?: 'PLAIN' | 'LOGIN'; declareSize?: boolean },
): Promise<SmtplibResult> {
  const r = await run(
    '/usr/bin/python3',
    ['-c', PYTHON],
    JSON.stringify({ port, tls: opts.tls, mechanism: opts.mechanism, declareSize: opts.declareSize, ...s, raw: s.raw.toString('latin1') }),
  );
  if (r.code !== 0) throw new Error(`python smtplib: ${r.stderr}`);
  return JSON.parse(r.stdout) as SmtplibResult;
}

/** nodemailer's SMTP transport, composing the message itself from `mail`. */
export async function nodemailerSend(
  port: number,
  auth: { user: string; pass: string },
  mail: nodemailer.SendMailOptions,
  opts: { secure: boolean },
): Promise<{ response: string; accepted: string[]; rejected: string[] }> {
  const transport = nodemailer.createTransport({
    host: '127.0.0.1',
    port,
    secure: opts.secure,
    requireTLS: !opts.secure,
    auth,
    tls: { rejectUnauthorized: false },
  });
  try {
    const info = await transport.sendMail(mail);
    return { response: info.response, accepted: info.accepted as string[], rejected: info.rejected as string[] };
  } finally {
    transport.close();
  }
}
