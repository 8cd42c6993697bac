// The mailauth call the forwarder makes (mailauth ships no type declarations).
declare module 'mailauth' {
  export function sealMessage(
    input: Buffer | string,
    seal: { signingDomain: string; selector: string; privateKey: string; authResults: string; cv: string },
  ): Promise<Buffer>;
}
