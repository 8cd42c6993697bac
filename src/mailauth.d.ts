// mailauth ships no type declarations; these cover the calls Postern makes (inbound verification,
// the forwarder's ARC seal).
declare module 'mailauth' {
  // Its result is a deep, loosely shaped object; inbound/verify.ts reads it through its own interface.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  export function authenticate(input: Buffer | string | NodeJS.ReadableStream, opts: Record<string, unknown>): Promise<any>;
  export function sealMessage(
    input: Buffer | string,
    seal: { signTime?: Date; signingDomain: string; selector: string; privateKey: string; authResults: string; cv: string },
  ): Promise<Buffer>;
}

// mailauth's SPF evaluator on its own (`postern doctor` asks it per public address).
declare module 'mailauth/lib/spf/index.js' {
  const spfModule: {
    spf(opts: {
      ip: string;
      sender: string;
      helo: string;
      mta: string;
      resolver: (name: string, rrtype: string) => Promise<unknown>;
    }): Promise<{ status: { result: string; comment?: string | false } }>;
  };
  export default spfModule;
}
