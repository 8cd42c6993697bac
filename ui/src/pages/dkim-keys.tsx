// A sending domain's DKIM keys on its page: each key's record with what to do with it (publish,
// keep through the overlap, remove), where the rotation stands, when the schedule starts the next
// one, and a control that starts one now (POST /v1/inbound/domains/{id}/dkim/rotate). The states
// and their moves are the server's (docs/deliverability.md, "DKIM key rotation").
import { post } from '../api';
import { Badge, ConfirmButton, CopyButton, Facts, StatusBadge, Table, Time, type Tone } from '../components';
import type { ResponseOf } from '../../../src/contract/responses';

export type DkimInfo = NonNullable<ResponseOf<'GET /v1/inbound/domains/:id'>['dkim']>;
export type DkimKey = DkimInfo['keys'][number];

const ACTION_TONES: Record<DkimKey['action'], Tone> = { publish: 'info', keep: 'ok', remove: 'warn' };

export function DkimKeys(props: { id: string; domain: string; signing: boolean; dkim: DkimInfo; onChange(): void }) {
  const { dkim } = props;
  const underWay = dkim.rotation === 'pending' || dkim.rotation === 'verified';
  return (
    <section aria-label="DKIM keys">
      <h2>DKIM keys</h2>
      <Facts
        items={[
          ['Rotation', <StatusBadge status={dkim.rotation} />],
          ['Last rotated', <Time iso={dkim.lastRotatedAt} />],
          ['Next rotation', dkim.nextRotationAt ? <Time iso={dkim.nextRotationAt} /> : <span class="muted">on demand only</span>],
        ]}
      />
      {dkim.rotation === 'pending' && (
        <p class="notice warn" role="status">
          Publish the new records below: {props.domain} keeps signing with its current key until Postern finds them.
        </p>
      )}
      {dkim.keys.length > 0 && (
        <Table
          caption="DKIM keys and their records"
          rows={dkim.keys}
          rowKey={(k) => k.selector}
          columns={[
            { label: 'Selector', cell: (k) => <code>{k.selector}</code> },
            { label: 'Algorithm', cell: (k) => (k.algorithm === 'rsa' ? 'RSA 2048' : 'Ed25519') },
            { label: 'State', cell: (k) => <StatusBadge status={k.state} /> },
            {
              label: 'Record',
              cell: (k) => (
                <Badge tone={ACTION_TONES[k.action]} title={k.purpose}>
                  {k.action === 'keep' && k.retireAt ? 'keep until' : k.action}
                </Badge>
              ),
            },
            {
              label: 'Name',
              cell: (k) => (
                <span class="record">
                  <code>{k.name}</code> <CopyButton text={k.name} label={`Copy DKIM record name ${k.selector}`} />
                </span>
              ),
            },
            {
              label: 'Value',
              cell: (k) => (
                <span class="record">
                  <code class="record-value">{k.value}</code> <CopyButton text={k.value} label={`Copy DKIM record value ${k.selector}`} />
                </span>
              ),
            },
            { label: 'Until', cell: (k) => <Time iso={k.retireAt} /> },
          ]}
        />
      )}
      {props.signing && !underWay && (
        <ConfirmButton
          label="Rotate DKIM key"
          question={`Make new DKIM keys for ${props.domain}? You publish their records; signing switches once Postern finds them, and the current record is kept through the overlap.`}
          confirmLabel="Rotate"
          onConfirm={async () => {
            await post(`/v1/inbound/domains/${encodeURIComponent(props.id)}/dkim/rotate`, {});
            props.onChange();
          }}
        />
      )}
    </section>
  );
}
