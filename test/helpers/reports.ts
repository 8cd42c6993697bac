// Reports a remote MTA sends back to a message's return path, built as real MIME: a delivery status
// notification (RFC 3464, multipart/report; report-type=delivery-status) and a feedback report
// (RFC 5965 ARF, multipart/report; report-type=feedback-report). Tests deliver them over SMTP to
// Postern's listener, as the remote MTA would.
import MimeNode from 'nodemailer/lib/mime-node/index.js';

export interface DsnRecipient {
  recipient: string;
  action: 'failed' | 'delayed' | 'delivered';
  status: string;
  /** The remote SMTP reply, e.g. `550 5.1.1 user unknown`. */
  diagnostic: string;
}

/** A DSN addressed to `to` (the return path), one per-recipient group per entry; `returnedHeaders` null leaves them out. */
export async function buildDsn(
  to: string,
  recipients: DsnRecipient[],
  returnedHeaders: string | null = 'Subject: Hi\r\n',
): Promise<Buffer> {
  const root = new MimeNode('multipart/report; report-type=delivery-status');
  root.setHeader({ from: 'MAILER-DAEMON@mx.example.net', to, subject: 'Delivery Status Notification' });
  root.createChild('text/plain').setContent(`Delivery report for ${recipients.map((r) => r.recipient).join(', ')}.`);
  const groups = recipients.map(
    (r) =>
      `Final-Recipient: rfc822; ${r.recipient}\r\nAction: ${r.action}\r\nStatus: ${r.status}\r\nDiagnostic-Code: smtp; ${r.diagnostic}\r\n`,
  );
  root
    .createChild('message/delivery-status')
    .setContent(`Reporting-MTA: dns; mx.example.net\r\nArrival-Date: Mon, 1 Jan 2024 00:00:00 +0000\r\n\r\n${groups.join('\r\n')}`);
  if (returnedHeaders !== null) root.createChild('text/rfc822-headers').setContent(returnedHeaders);
  return root.build();
}

/** An ARF complaint (Feedback-Type: abuse) about a message to `recipient`, addressed to `to`. */
export async function buildArf(to: string, recipient: string, returned: string): Promise<Buffer> {
  const root = new MimeNode('multipart/report; report-type=feedback-report');
  root.setHeader({ from: 'fbl@mailbox.example.net', to, subject: 'FW: abuse report' });
  root.createChild('text/plain').setContent('This is an email abuse report for an email message received from you.');
  root
    .createChild('message/feedback-report')
    .setContent(
      `Feedback-Type: abuse\r\nUser-Agent: ExampleFBL/1.0\r\nVersion: 1\r\nOriginal-Mail-From: <${to}>\r\nOriginal-Rcpt-To: <${recipient}>\r\nArrival-Date: Mon, 1 Jan 2024 00:00:00 +0000\r\n`,
    );
  root.createChild('message/rfc822').setContent(returned);
  return root.build();
}
