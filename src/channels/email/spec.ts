// The email channel as the layers serving every channel see it (../spec.ts). Its live transport is
// built from the config by the composition root (index.ts: direct to MX or through a relay).
import { isEmailAddress } from '../../contract/addresses.js';
import { simulationWord } from '../simulation.js';
import { asIs, channelSpec } from '../spec.js';
import { emailVerbatim, renderEmail } from './render.js';
import type { EmailContent, EmailOutput } from '../../contract/channels.js';

export const email = channelSpec<EmailContent, EmailOutput>({
  channel: 'email',
  recipientIssue: (to) => (isEmailAddress(to) ? null : 'must be an email address'),
  envelope: true,
  render: renderEmail,
  verbatim: emailVerbatim,
  // The local part before any +tag, whatever the domain: failed@example.com, deferred+1@x.test.
  simulation: (recipient) => simulationWord(recipient.slice(0, recipient.lastIndexOf('@')).split('+')[0]),
  suppression: { key: asIs, reason: 'bounce' },
  destination: (recipient) => recipient.slice(recipient.lastIndexOf('@') + 1).toLowerCase(),
  live: { kind: 'config' },
});
