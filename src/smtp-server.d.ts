// smtp-server's DATA reader, which smtp/data-stream.ts puts a faster search into; its types
// package declares only the server.
declare module 'smtp-server/lib/smtp-stream' {
  export class SMTPStream {}
}
