// mailauth ships no type declarations; these cover the calls Postern's inbound path makes.
declare module 'mailauth' {
  export function authenticate(input: Buffer | string | NodeJS.ReadableStream, opts: Record<string, unknown>): Promise<any>;
}
declare module 'mailauth/lib/dkim/sign.js' {
  export function dkimSign(input: Buffer | string, opts: Record<string, unknown>): Promise<{ signatures: string; errors: unknown[] }>;
}
